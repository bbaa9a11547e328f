// The morgue of a queue (/queues/{q}/morgue): entries by id or updated_at,
// selection, and requeue / delete of the selection or of everything.

import {h, mount} from './dom.js';
import {api} from './api.js';
import {plural} from './format.js';
import {queue as liveQueue, refresh as refreshLive} from './live.js';
import {
  button, clearBanner, confirmDialog, emptyState, errorBlock, loading, payloadList, queueHeader, queueHref,
  reportError, timeText, toast,
} from './components.js';
import {boundValue, filterBar, pager, readFilters, searchBar, searchBounds} from './filters.js';
import {selection} from './selection.js';

const MORGUE_ORDERS = ['id', 'updated_at'];
const PAGE_SIZE = 50;

/** render is the morgue page. */
export function render(root, {params: [q], query, signal}) {
  document.title = `${q} · morgue · Orderly`;
  const base = queueHref(q, 'morgue');
  const f = readFilters(query, MORGUE_ORDERS);
  let entries = [];

  const list = h('div', {class: 'list'}, loading('Loading the morgue…'));
  const requeueSel = button('Requeue selected', {icon: 'requeue', small: true, id: 'requeue-selected', write: true, kind: 'primary'});
  const deleteSel = button('Delete selected', {icon: 'trash', small: true, id: 'delete-selected', write: true, kind: 'danger-outline'});
  const requeueAll = button('Requeue all', {icon: 'requeue', small: true, id: 'requeue-all', write: true});
  const deleteAll = button('Delete all', {icon: 'trash', small: true, id: 'delete-all', write: true, kind: 'danger-outline'});
  const sel = selection({list, noun: ['entry', 'entries'], buttons: [requeueSel, deleteSel], onDraw: () => {
    const m = liveQueue(q);
    requeueAll.disabled = deleteAll.disabled = entries.length === 0 && (!m || m.morgue_length === 0);
  }});

  // act runs a morgue action after the operator confirms it.
  const act = async ({verb, all}) => {
    const ids = sel.ids();
    const total = liveQueue(q)?.morgue_length;
    const what = all
      ? (total !== undefined ? `all ${plural(total, 'entry', 'entries')}` : 'every entry')
      : plural(ids.length, 'entry', 'entries');
    const requeue = verb === 'requeue';
    const ok = await confirmDialog({
      title: `${requeue ? 'Requeue' : 'Delete'} ${what} of the morgue of ${q}?`,
      message: requeue
        ? h('p', null, 'Each entry goes back to the queue, due now, as a fresh job (retry_count -1), merging with what is queued under its id.')
        : h('p', null, 'The entries are deleted with their payloads. This cannot be undone.'),
      confirm: requeue ? 'Requeue' : 'Delete', danger: !requeue,
    });
    if (!ok) return;
    const body = all ? {all: true} : {ids};
    try {
      const a = requeue ? await api.requeue(q, body) : await api.deleteDead(q, body);
      const n = requeue ? a.requeued : a.deleted;
      toast(`${requeue ? 'Requeued' : 'Deleted'} ${plural(n, 'job')}`);
      clearBanner('action');
    } catch (e) {
      reportError('action', `${requeue ? 'Requeue' : 'Delete'} failed.`, e);
    }
    sel.clear();
    refreshLive();
    load();
  };
  requeueSel.addEventListener('click', () => act({verb: 'requeue'}));
  deleteSel.addEventListener('click', () => act({verb: 'delete'}));
  requeueAll.addEventListener('click', () => act({verb: 'requeue', all: true}));
  deleteAll.addEventListener('click', () => act({verb: 'delete', all: true}));

  const card = (e) => {
    const box = sel.box(e.id);
    return h('article', {class: 'job dead', dataset: {id: e.id}},
      h('header', {class: 'job-head'},
        h('label', {class: 'check', dataset: {write: ''}}, box),
        h('span', {class: 'job-id', title: e.id}, e.id === '' ? '(empty)' : e.id),
        h('span', {class: 'badge dead'}, 'dead'),
        h('span', {class: 'spacer'}),
        h('span', {class: 'job-meta'}, h('span', {class: 'meta-label'}, 'updated_at'), timeText(e.updated_at)),
        h('span', {class: 'job-meta muted'}, plural(e.payload_count, 'payload'))),
      errorBlock(e.error),
      payloadList(e.payloads, e.payload_count));
  };

  const load = async () => {
    let min, max;
    try {
      min = boundValue(f.order, f.min);
      max = boundValue(f.order, f.max);
    } catch (e) {
      mount(list, emptyState('alert', 'This filter cannot be read', e.message));
      return;
    }
    try {
      const page = await api.morgue(q, {order: f.order, min, max, rev: f.rev, cursor: f.cursor, limit: f.limit || PAGE_SIZE, payloads: 5,
        ...searchBounds(f)}, {signal});
      clearBanner('morgue');
      if (signal.aborted) return;
      entries = page.entries;
      sel.setRows(entries.map((e) => e.id));
      if (entries.length === 0) {
        const filtered = f.min || f.max || f.cursor;
        const searched = f.idprefix || f.error;
        mount(list, emptyState(searched ? 'search' : 'inbox', searched ? 'No match' : filtered ? 'No entries in this range' : 'The morgue is empty',
          searched ? `No entry matches the search${page.next ? ` among the ${page.scanned} read so far` : ''}.`
            : filtered ? 'Widen the range or clear the filter.' : 'Jobs that run out of retries land here, with their last error.'),
        page.next ? pager({base, orders: MORGUE_ORDERS, filters: f, next: page.next, shown: 'no match', scanned: page.scanned}) : null);
      } else {
        mount(list, entries.map(card),
          pager({base, orders: MORGUE_ORDERS, filters: f, next: page.next, shown: plural(entries.length, 'entry', 'entries'), scanned: page.scanned}));
      }
    } catch (e) {
      if (signal.aborted) return;
      entries = [];
      sel.setRows([]);
      reportError('morgue', `Could not list the morgue of ${q}.`, e);
      mount(list, emptyState('alert', 'The listing failed', e.message));
    }
    sel.draw();
  };

  mount(root,
    queueHeader(q, 'morgue', signal),
    searchBar({base, filters: f, what: 'entries'}),
    filterBar({base, orders: MORGUE_ORDERS, filters: f,
      extra: button('Refresh', {icon: 'refresh', small: true, onclick: () => { refreshLive(); load(); }}),
      quick: [['Newest first', {order: 'updated_at', dir: 'desc'}], ['Oldest first', {order: 'updated_at'}],
        ['Last hour', {order: 'updated_at', min: '-1h', dir: 'desc'}], ['By id', {}]]}),
    h('div', {class: 'bulkbar', dataset: {write: ''}},
      h('label', {class: 'check'}, sel.selectAll), sel.count, requeueSel, deleteSel,
      h('span', {class: 'spacer'}), requeueAll, deleteAll),
    list);
  signal.addEventListener('abort', () => clearBanner('morgue'));
  sel.draw();
  load();
}
