// The listing controls shared by the jobs and the morgue pages: order,
// direction, bounds and cursor paging. The state lives in the URL's query
// (order, dir, min, max, cursor, page), so a filtered page is a link.

import {h, icon} from './dom.js';
import {localTime, nowSec} from './format.js';
import {navigate} from './router.js';

/** ORDERS describes the listing orders and how their bounds are typed. */
const TIME_HELP = 'Times: now, -1h, +30m, 2024-05-01 12:00 (local) or unix seconds.';
export const ORDERS = {
  id: {kind: 'text', from: 'from id', to: 'to id', help: 'Ids compare byte by byte: "order-10" sorts before "order-9".'},
  perform_at: {kind: 'time', from: 'from, e.g. -1h', to: 'to, e.g. now', help: TIME_HELP},
  retry_count: {kind: 'int', from: 'from, e.g. 0', to: 'to, e.g. 5', help: 'retry_count -1 is a fresh job, 0 failed once, and so on.'},
  updated_at: {kind: 'time', from: 'from, e.g. -1d', to: 'to, e.g. now', help: TIME_HELP},
};

/** readFilters reads the listing state from the query, with defaults. */
export function readFilters(query, orders) {
  return {
    order: orders.includes(query.order) ? query.order : orders[0],
    rev: query.dir === 'desc',
    min: query.min || '',
    max: query.max || '',
    cursor: query.cursor || '',
    page: Math.max(1, parseInt(query.page, 10) || 1),
    // The page size, when the URL sets one (1 to 1000); the page's default otherwise.
    limit: Math.min(1000, Math.max(0, parseInt(query.limit, 10) || 0)) || 0,
    // Searches: ids starting with idprefix (an id listing between bounds),
    // or entries whose last error contains error (the API's error=).
    idprefix: query.idprefix || '',
    error: query.error || '',
  };
}

// The highest code point: an id listing from p to p + TOP holds every id
// that starts with p.
const TOP = '\u{10FFFF}';

/**
 * searchBounds turns the filters' search into listing parameters: an id
 * prefix becomes an id range, an error text the API's error= (over the
 * failed jobs only, with failedOnly).
 */
export function searchBounds(f, {failedOnly = false} = {}) {
  if (f.idprefix) return {order: 'id', min: f.idprefix, max: f.idprefix + TOP, rev: f.rev};
  // Only jobs that failed (retry_count >= 0) have a last error: the
  // search reads just those, through the retry index.
  if (f.error && failedOnly) return {error: f.error, order: 'retry_count', min: '0', max: ''};
  if (f.error) return {error: f.error};
  return {};
}

/**
 * searchBar renders the search: by id (the ids that start with the text)
 * or over the last errors (a bounded scan on the node, which says how many
 * entries it read).
 */
export function searchBar({base, filters, what}) {
  const input = h('input', {class: 'input', id: 'search', type: 'search', value: filters.idprefix || filters.error,
    placeholder: `Find ${what} by id, or by text in their last error`, 'aria-label': 'Search', spellcheck: 'false', autocomplete: 'off'});
  const go = (key) => {
    const v = input.value;
    if (v === '') return navigate(base);
    navigate(base + '?' + new URLSearchParams({[key]: v}));
  };
  const active = filters.idprefix
    ? [`ids starting with ${JSON.stringify(filters.idprefix)}`]
    : filters.error ? [`last error contains ${JSON.stringify(filters.error)} (any case)`] : null;
  return h('form', {class: 'filters search', role: 'search', onsubmit: (e) => { e.preventDefault(); go('idprefix'); }},
    h('div', {class: 'filter-row'},
      h('div', {class: 'filter-group grow'}, h('span', {class: 'filter-label'}, 'Search'),
        h('div', {class: 'range'}, input,
          h('button', {type: 'submit', class: 'btn primary', id: 'search-id', title: 'ids that start with the text'}, 'Find id'),
          h('button', {type: 'button', class: 'btn', id: 'search-errors', onclick: () => go('error'),
            title: 'entries whose last error contains the text; the node reads up to 10,000 entries per page'}, 'Search errors'),
          active ? h('a', {class: 'btn ghost', href: base, id: 'clear-search'}, 'Clear') : null))),
    active ? h('div', {class: 'filter-hint muted', id: 'search-active'}, 'Showing ', active) : null);
}

/** filtersQuery renders the listing state as query parameters (defaults left out). */
export function filtersQuery(f, orders) {
  const q = {};
  if (f.order !== orders[0]) q.order = f.order;
  if (f.rev) q.dir = 'desc';
  if (f.min) q.min = f.min;
  if (f.max) q.max = f.max;
  if (f.cursor) q.cursor = f.cursor;
  if (f.limit) q.limit = String(f.limit);
  if (f.cursor && f.page > 1) q.page = String(f.page);
  if (f.idprefix) q.idprefix = f.idprefix;
  if (f.error) q.error = f.error;
  return q;
}

const UNIT = {s: 1, m: 60, h: 3600, d: 86400, w: 604800};

/**
 * boundValue turns a bound as typed into the API's value: ids as they are;
 * times as unix seconds from "now", "-1h" / "+30m" (relative to now), a
 * date or date-time (local time) or unix seconds; retry counts as integers.
 * It throws an Error that says what it could not read.
 */
export function boundValue(order, text) {
  const s = text.trim();
  if (s === '') return '';
  const kind = ORDERS[order].kind;
  if (kind === 'text') return text;
  if (kind === 'int') {
    if (!/^-?\d+$/.test(s)) throw new Error(`"${s}" is not a whole number`);
    return s;
  }
  if (/^[-+]?\d+(\.\d+)?$/.test(s)) return s;
  if (s.toLowerCase() === 'now') return nowSec().toFixed(3);
  const rel = /^([-+])\s*(\d+(?:\.\d+)?)\s*([smhdw])$/i.exec(s);
  if (rel) {
    const d = Number(rel[2]) * UNIT[rel[3].toLowerCase()];
    return (nowSec() + (rel[1] === '-' ? -d : d)).toFixed(3);
  }
  // "2024-05-01 12:00" is read as local time, like the times the page shows.
  const ms = Date.parse(/^\d{4}-\d\d-\d\d$/.test(s) ? s + 'T00:00' : s.replace(' ', 'T'));
  if (Number.isNaN(ms)) throw new Error(`"${s}" is not a time: use now, -1h, +30m, 2024-05-01 12:00 or unix seconds`);
  return String(ms / 1000);
}

/** describeBound explains a time bound as the page will use it. */
function describeBound(order, text) {
  try {
    const v = boundValue(order, text);
    if (v === '' || ORDERS[order].kind !== 'time') return '';
    return localTime(Number(v));
  } catch {
    return '';
  }
}

/**
 * filterBar renders the controls. base is the page's path; quick are
 * [label, query] shortcuts; extra nodes go to the right (a refresh button).
 */
export function filterBar({base, orders, filters, quick = [], extra}) {
  const go = (f) => {
    const q = new URLSearchParams(filtersQuery({...f, cursor: '', page: 1, idprefix: ''}, orders)).toString();
    navigate(base + (q ? '?' + q : ''));
  };
  const min = h('input', {class: 'input', name: 'min', value: filters.min, placeholder: ORDERS[filters.order].from,
    'aria-label': 'From (inclusive)', spellcheck: 'false', autocomplete: 'off'});
  const max = h('input', {class: 'input', name: 'max', value: filters.max, placeholder: ORDERS[filters.order].to,
    'aria-label': 'To (inclusive)', spellcheck: 'false', autocomplete: 'off'});
  const problem = h('div', {class: 'form-error', role: 'alert', hidden: true});
  const hint = h('div', {class: 'filter-hint muted'});
  const explain = () => {
    const a = describeBound(filters.order, min.value), b = describeBound(filters.order, max.value);
    hint.textContent = a || b ? `${filters.order} from ${a || '−∞'} to ${b || '+∞'}, inclusive` : ORDERS[filters.order].help;
  };
  min.addEventListener('input', explain);
  max.addEventListener('input', explain);
  explain();

  const seg = (name, options, current, onPick) => h('div', {class: 'seg', role: 'group', 'aria-label': name},
    options.map(([value, label]) => h('button', {type: 'button', class: ['seg-btn', value === current && 'active'],
      'aria-pressed': String(value === current), dataset: {[name]: value}, onclick: () => onPick(value)}, label)));

  const form = h('form', {class: 'filters', onsubmit: (e) => {
    e.preventDefault();
    for (const input of [min, max]) {
      try {
        boundValue(filters.order, input.value);
      } catch (err) {
        problem.textContent = err.message;
        problem.hidden = false;
        input.focus();
        return;
      }
    }
    // Ids are taken as typed (spaces are valid in ids); other bounds trimmed.
    const clean = (v) => ORDERS[filters.order].kind === 'text' ? v : v.trim();
    go({...filters, min: clean(min.value), max: clean(max.value)});
  }},
  h('div', {class: 'filter-row'},
    h('div', {class: 'filter-group'}, h('span', {class: 'filter-label'}, 'Order by'),
      seg('order', orders.map((o) => [o, o]), filters.order, (o) => go({...filters, order: o, min: '', max: ''}))),
    h('div', {class: 'filter-group'}, h('span', {class: 'filter-label'}, 'Direction'),
      seg('dir', [['asc', '↑ Ascending'], ['desc', '↓ Descending']], filters.rev ? 'desc' : 'asc',
        (d) => go({...filters, rev: d === 'desc'}))),
    h('div', {class: 'filter-group grow'}, h('span', {class: 'filter-label'}, 'Range (inclusive)'),
      h('div', {class: 'range'}, min, h('span', {class: 'muted'}, 'to'), max,
        h('button', {type: 'submit', class: 'btn primary', id: 'apply-filters'}, 'Apply'),
        filters.min || filters.max
          ? h('button', {type: 'button', class: 'btn ghost', onclick: () => go({...filters, min: '', max: ''})}, 'Clear')
          : null)),
    extra ? h('div', {class: 'filter-group end'}, extra) : null),
  quick.length ? h('div', {class: 'quick'}, h('span', {class: 'filter-label'}, 'Quick'),
    quick.map(([label, q, title]) => {
      const active = q.order === filters.order && (q.min || '') === filters.min && (q.max || '') === filters.max &&
        (q.dir === 'desc') === filters.rev;
      return h('a', {class: ['chip', active && 'active'], title,
        href: base + (Object.keys(q).length ? '?' + new URLSearchParams(q) : '')}, label);
    })) : null,
  problem, hint);
  return form;
}

/** pager renders "First page" and "Next page" links for cursor paging. */
export function pager({base, orders, filters, next, shown, scanned}) {
  const first = filters.cursor
    ? h('a', {class: 'btn', href: base + qs(filtersQuery({...filters, cursor: '', page: 1}, orders))}, icon('arrowLeft'), 'First page')
    : null;
  const nextLink = next
    ? h('a', {class: 'btn', id: 'next-page', href: base + qs(filtersQuery({...filters, cursor: next, page: filters.page + 1}, orders))},
      'Next page', icon('arrowRight'))
    : null;
  return h('div', {class: 'pager'},
    h('span', {class: 'muted', id: 'pager-text'}, `Page ${filters.page} · ${shown}${scanned === undefined ? '' : ` · ${scanned} searched`}${next ? '' : ' · end of the listing'}`),
    h('div', {class: 'pager-links'}, first, nextLink));
}

const qs = (q) => {
  const s = new URLSearchParams(q).toString();
  return s ? '?' + s : '';
};
