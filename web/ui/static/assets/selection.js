// Selection of the rows of a listing, shared by the jobs and the morgue
// pages: a checkbox per row, "select every row of this page", a count, and
// the buttons that act on the selection, enabled once something is
// selected. Rows are the list's elements with data-id (cards or table
// rows), their checkboxes the inputs with data-select.

import {h} from './dom.js';
import {plural} from './format.js';

/**
 * selection returns the selection of a listing. list is the element that
 * holds the rows; noun is [one, many] ('entry', 'entries'); buttons are the
 * buttons that act on the selection; onDraw(n) runs after each redraw.
 * Call setRows(ids) after each load with the ids the page shows (and
 * whether each can be selected): selected ids no longer shown are dropped.
 */
export function selection({list, noun = ['job', 'jobs'], buttons = [], onDraw = null}) {
  const selected = new Set();
  let rows = []; // the ids of the page that can be selected
  const selectAll = h('input', {type: 'checkbox', id: 'select-all', 'aria-label': 'Select every row of this page'});
  const count = h('span', {class: 'sel-count muted'});

  const draw = () => {
    const n = selected.size;
    count.textContent = n ? `${plural(n, noun[0], noun[1])} selected` : `Select ${noun[1]} to act on them`;
    for (const b of buttons) b.disabled = n === 0;
    selectAll.checked = n > 0 && n === rows.length;
    selectAll.indeterminate = n > 0 && n < rows.length;
    selectAll.disabled = rows.length === 0;
    for (const box of list.querySelectorAll('input[data-select]')) box.checked = selected.has(box.dataset.select);
    for (const row of list.querySelectorAll('[data-id]')) row.classList.toggle('selected', selected.has(row.dataset.id));
    if (onDraw) onDraw(n);
  };
  selectAll.addEventListener('change', () => {
    selected.clear();
    if (selectAll.checked) for (const id of rows) selected.add(id);
    draw();
  });

  return {
    selectAll,
    count,
    draw,
    /** ids are the selected ids, in selection order. */
    ids: () => [...selected],
    /** clear empties the selection (draw to show it). */
    clear: () => selected.clear(),
    /** setRows records the ids the page shows that can be selected, dropping the others. */
    setRows(ids) {
      rows = ids;
      const shown = new Set(ids);
      for (const id of [...selected]) if (!shown.has(id)) selected.delete(id);
    },
    /** box is the checkbox of one row; disabled (with why as its title) when the row cannot be selected. */
    box(id, {disabled = false, why = ''} = {}) {
      return h('input', {type: 'checkbox', class: 'select', dataset: {select: id}, 'aria-label': `Select ${id}`,
        checked: selected.has(id), disabled, title: why || null, onchange: (ev) => {
          if (ev.target.checked) selected.add(id);
          else selected.delete(id);
          draw();
        }});
    },
  };
}
