// The jobs listing of a queue (/queues/{q}): cards (each job with its
// payloads) or a compact table (one line a job), a selection, and run now,
// kill and delete of the selected jobs through the API's endpoints of one
// job (docs/contract.md §3.9).

import {h, mount} from './dom.js';
import {ApiError, api, isDotId} from './api.js';
import {oneLine, plural} from './format.js';
import {refresh as refreshLive} from './live.js';
import {
  button, clearBanner, confirmDialog, emptyState, errorBlock, jobHref, loading, payloadList, queueHeader, queueHref,
  reportError, retryBadge, timeText, toast,
} from './components.js';
import {boundValue, filterBar, pager, readFilters, searchBar, searchBounds} from './filters.js';
import {DOT_ID_NOTE, deleteJob, queueActions} from './queue.js';
import {selection} from './selection.js';

// perform_at first: the default order, a bounded read at any size (ordering
// by id scans the queue).
const JOB_ORDERS = ['perform_at', 'id', 'retry_count'];
const PAGE_SIZE = 50;
const LIST_PAYLOADS = 5;

// ---- The view: cards or table, a preference kept for this tab (sessionStorage, as the token) ----

const VIEW_KEY = 'orderly.jobs.view';
const VIEWS = [['cards', 'Cards'], ['table', 'Table']];

/** jobsView is the view the operator chose last: 'cards' (the default) or 'table'. */
export function jobsView() {
  try {
    return sessionStorage.getItem(VIEW_KEY) === 'table' ? 'table' : 'cards';
  } catch {
    return 'cards';
  }
}

function setJobsView(v) {
  try {
    sessionStorage.setItem(VIEW_KEY, v);
  } catch { /* storage disabled: the choice lasts as long as the page */ }
}

// ---- Actions on the selected jobs ----

// The actions on the selected jobs: each calls the API once per id, at most
// BULK_PARALLEL at a time. An id no longer queued (404), or held only by a
// call in flight (409), is counted as skipped, not as a failure.
const BULK_PARALLEL = 4;
const BULK_ACTIONS = {
  perform_now: {
    label: 'Run now', icon: 'play', id: 'perform-selected', danger: false, done: (n) => `Made ${plural(n, 'job')} due now`,
    text: 'Each queued entry becomes due now; its retry count and last error are kept.',
    run: (q, id) => api.jobAction(q, id, 'perform_now'),
  },
  kill: {
    label: 'Kill', icon: 'skull', id: 'kill-selected', danger: true, done: (n) => `Killed ${plural(n, 'job')}`,
    text: 'Every queued payload of each id goes to the morgue with its last error; it can be requeued from there.',
    run: (q, id) => api.jobAction(q, id, 'kill'),
  },
  delete: {
    label: 'Delete', icon: 'trash', id: 'delete-selected', danger: true, done: (n) => `Deleted ${plural(n, 'job')}`,
    text: 'The queued entry of each id is deleted with all its payloads. This cannot be undone.',
    run: (q, id) => api.deleteJob(q, id),
  },
};

/**
 * runBulk calls run for every id, BULK_PARALLEL at a time, and counts the
 * outcomes: done, skipped (no longer queued, or in flight only) and failed,
 * with the first failure's error.
 */
export async function runBulk(ids, run) {
  const out = {done: 0, skipped: 0, failed: 0, error: null};
  const queue = [...ids];
  const worker = async () => {
    while (queue.length) {
      const id = queue.shift();
      try {
        await run(id);
        out.done++;
      } catch (e) {
        if (e instanceof ApiError && (e.status === 404 || e.status === 409)) {
          out.skipped++;
        } else {
          out.failed++;
          out.error ||= e;
        }
      }
    }
  };
  await Promise.all(Array.from({length: Math.min(BULK_PARALLEL, queue.length)}, worker));
  return out;
}

async function bulkAction(q, key, ids) {
  const a = BULK_ACTIONS[key];
  const ok = await confirmDialog({
    title: `${a.label} ${plural(ids.length, 'selected job')} of ${q}?`,
    message: [h('p', null, a.text),
      h('p', {class: 'modal-note'}, 'A call in flight for an id is not touched: it finishes and settles as usual.')],
    confirm: a.label, danger: a.danger,
  });
  if (!ok) return false;
  const r = await runBulk(ids, (id) => a.run(q, id));
  const skipped = r.skipped ? `; ${plural(r.skipped, 'job')} no longer queued` : '';
  toast(`${a.done(r.done)}${skipped}`, r.failed ? 'error' : 'ok');
  if (r.failed) reportError('action', `${a.label} failed for ${plural(r.failed, 'job')}.`, r.error);
  else clearBanner('action');
  refreshLive();
  return true;
}

// ---- Cards and rows ----

/** jobCard renders one queued job of a listing, with its payloads. */
function jobCard(q, j, sel, onDeleted) {
  return h('article', {class: 'job', dataset: {id: j.id}},
    h('header', {class: 'job-head'},
      h('label', {class: 'check', dataset: {write: ''}}, selectBox(sel, j.id)),
      h('a', {class: 'job-id', href: jobHref(q, j.id), title: j.id}, j.id === '' ? '(empty)' : j.id),
      retryBadge(j.retry_count),
      h('span', {class: 'spacer'}),
      h('span', {class: 'job-meta'}, h('span', {class: 'meta-label'}, 'perform_at'), timeText(j.perform_at)),
      h('span', {class: 'job-meta muted'}, plural(j.payload_count, 'payload')),
      deleteButton(q, j, onDeleted)),
    errorBlock(j.error),
    payloadList(j.payloads, j.payload_count, jobHref(q, j.id)));
}

/** jobRow renders one queued job as a line of the compact table. */
function jobRow(q, j, sel, onDeleted) {
  const first = j.payloads && j.payloads.length ? oneLine(j.payloads[0]) : '';
  return h('tr', {class: 'job-row', dataset: {id: j.id}},
    h('td', {class: 'check-cell', dataset: {write: ''}}, h('label', {class: 'check'}, selectBox(sel, j.id))),
    h('td', {class: 'idcell'}, h('a', {class: 'id', href: jobHref(q, j.id), title: j.id}, j.id === '' ? '(empty)' : j.id)),
    h('td', null, retryBadge(j.retry_count)),
    h('td', {class: 'time-cell'}, timeText(j.perform_at)),
    h('td', {class: 'num'}, String(j.payload_count)),
    h('td', {class: 'preview'}, first ? h('code', {class: 'preview-code', title: first}, first) : h('span', {class: 'muted'}, '—')),
    h('td', {class: 'error-cell', title: j.error || null}, j.error ? j.error.split('\n', 1)[0] : h('span', {class: 'muted'}, '—')),
    h('td', {class: 'row-actions'}, deleteButton(q, j, onDeleted)));
}

function jobTable(q, jobs, sel, onDeleted) {
  return h('div', {class: 'panel jobs-table-panel'}, h('div', {class: 'table-wrap'}, h('table', {class: 'data compact jobs-table'},
    h('thead', null, h('tr', null,
      h('th', {class: 'check-cell', dataset: {write: ''}}), h('th', null, 'Job'), h('th', null, 'Retry'), h('th', null, 'perform_at'),
      h('th', {class: 'num'}, 'Payloads'), h('th', null, 'First payload'), h('th', null, 'Last error'), h('th', {class: 'row-actions'}))),
    h('tbody', null, jobs.map((j) => jobRow(q, j, sel, onDeleted))))));
}

// selectBox is a job's checkbox; the ids "." and ".." cannot be acted on
// from a browser, so theirs is disabled.
const selectBox = (sel, id) => sel.box(id, isDotId(id) ? {disabled: true, why: DOT_ID_NOTE} : {});

function deleteButton(q, j, onDeleted) {
  if (isDotId(j.id)) {
    return button('', {icon: 'trash', kind: 'ghost icon-only', small: true, disabled: true, title: DOT_ID_NOTE, write: true});
  }
  return button('', {icon: 'trash', kind: 'ghost icon-only', small: true, title: 'Delete this job', dataset: {delete: j.id}, write: true,
    onclick: async () => {
      if (await deleteJob(q, j.id, j.payload_count)) onDeleted();
    }});
}

// ---- /queues/{q} ----

/** renderJobs is the jobs listing of a queue. */
export function renderJobs(root, {params: [q], query, signal}) {
  document.title = `${q} · Orderly`;
  const base = queueHref(q);
  const f = readFilters(query, JOB_ORDERS);
  let view = jobsView();
  const list = h('div', {class: 'list'}, loading('Loading jobs…'));
  const actionButtons = Object.entries(BULK_ACTIONS).map(([key, a]) => button(`${a.label} selected`, {
    icon: a.icon, small: true, id: a.id, write: true, kind: key === 'delete' ? 'danger-outline' : null,
    onclick: async () => {
      if (!await bulkAction(q, key, sel.ids())) return;
      sel.clear();
      load();
    },
  }));
  const sel = selection({list, noun: ['job', 'jobs'], buttons: actionButtons});
  let page = null; // the last page read

  const draw = () => {
    if (!page) return;
    const jobs = page.jobs;
    sel.setRows(jobs.filter((j) => !isDotId(j.id)).map((j) => j.id));
    mount(list,
      view === 'table' ? jobTable(q, jobs, sel, load) : jobs.map((j) => jobCard(q, j, sel, load)),
      pager({base, orders: JOB_ORDERS, filters: f, next: page.next, shown: plural(jobs.length, 'job'), scanned: page.scanned}));
    sel.draw();
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
      const p = await api.jobs(q, {order: f.order, min, max, rev: f.rev, cursor: f.cursor, limit: f.limit || PAGE_SIZE,
        payloads: LIST_PAYLOADS, ...searchBounds(f, {failedOnly: true})}, {signal});
      clearBanner('jobs');
      if (signal.aborted) return;
      page = null;
      if (p.jobs.length === 0) {
        sel.setRows([]);
        sel.draw();
        mount(list, emptyListing(f, p, base));
        return;
      }
      page = p;
      draw();
    } catch (e) {
      if (signal.aborted) return;
      reportError('jobs', `Could not list the jobs of ${q}.`, e);
      mount(list, emptyState('alert', 'The listing failed', e.message));
    }
  };
  const refreshBtn = button('Refresh', {icon: 'refresh', small: true, onclick: () => { refreshLive(); load(); }});
  const viewSwitch = h('div', {class: 'seg', role: 'group', 'aria-label': 'View', id: 'jobs-view'},
    VIEWS.map(([v, label]) => h('button', {type: 'button', class: ['seg-btn', v === view && 'active'], 'aria-pressed': String(v === view),
      dataset: {view: v}, title: v === 'table' ? 'One line a job' : 'Each job with its payloads', onclick: (e) => {
        view = v;
        setJobsView(v);
        for (const b of viewSwitch.querySelectorAll('.seg-btn')) {
          b.classList.toggle('active', b.dataset.view === v);
          b.setAttribute('aria-pressed', String(b.dataset.view === v));
        }
        e.currentTarget.blur();
        draw();
      }}, label)));
  mount(root,
    queueHeader(q, 'jobs', signal, queueActions(q, load)),
    searchBar({base, filters: f, what: 'jobs'}),
    filterBar({base, orders: JOB_ORDERS, filters: f, extra: [viewSwitch, refreshBtn], quick: [
      ['All', {}],
      ['Fresh', {order: 'retry_count', max: '-1'}, 'retry_count -1: never failed'],
      ['Retries', {order: 'retry_count', min: '0'}, 'retry_count ≥ 0: failed at least once'],
      ['Due now', {order: 'perform_at', max: 'now'}, 'perform_at ≤ now'],
      ['Scheduled', {order: 'perform_at', min: 'now'}, 'perform_at ≥ now'],
      ['Most retried', {order: 'retry_count', dir: 'desc'}],
    ]}),
    h('div', {class: 'bulkbar', dataset: {write: ''}},
      h('label', {class: 'check'}, sel.selectAll), sel.count, actionButtons),
    list);
  signal.addEventListener('abort', () => clearBanner('jobs'));
  sel.draw();
  load();
}

// emptyListing says why a page of the listing has no job.
function emptyListing(f, page, base) {
  const filtered = f.min || f.max || f.cursor;
  const searched = f.idprefix || f.error;
  if (searched && page.next) {
    return [emptyState('search', 'No match yet', `${page.scanned} jobs searched so far.`),
      pager({base, orders: JOB_ORDERS, filters: f, next: page.next, shown: 'no match', scanned: page.scanned})];
  }
  return emptyState('inbox', searched ? 'No match' : filtered ? 'No jobs in this range' : 'No queued jobs',
    searched ? 'No queued job matches the search (jobs in flight are on the Processing tab).'
      : filtered ? 'Widen the range or clear the filter.' : 'Jobs appear here when they are enqueued; jobs in flight are on the Processing tab.');
}
