// A queue's pages: the in-flight batches (/queues/{q}/processing) and one
// job (/queues/{q}/job?id=...), with its actions (run now, kill, delete)
// and, on a stateful queue, its state, version and timer (docs/contract.md
// §11); the queue actions of its header. The jobs listing is jobs.js.

import {h, mount} from './dom.js';
import {ApiError, api, isDotId} from './api.js';
import {base64Bytes, num, plural} from './format.js';
import {queue as liveQueue, refresh as refreshLive} from './live.js';
import {
  button, clearBanner, confirmDialog, emptyState, errorBlock, every, idText, jobHref, loading, payloadList,
  queueHeader, queueHref, reportError, retryBadge, timeText, toast,
} from './components.js';
import {finishedCard} from './finished.js';

// Browsers resolve the path segments "." and ".." (escaped or not) before a
// request leaves, so the API's DELETE cannot name those ids from here.
export const DOT_ID_NOTE = 'A browser cannot send the id "." or ".." in a URL path: delete it with the CLI or the API.';

// ---- Queue actions (docs/contract.md §3.9) ----

const ACTIONS = {
  perform_all_now: {
    label: 'Perform all now', icon: 'play', kind: null,
    title: (q) => `Perform every job of ${q} now?`,
    text: 'Every queued job due later becomes due now; jobs already due keep their time. In-flight batches are not touched.',
    done: (a) => `Updated ${plural(a.updated, 'job')}: due now`,
  },
  kill_failed: {
    label: 'Kill failed', icon: 'skull', kind: 'warn',
    title: (q) => `Kill the failed jobs of ${q}?`,
    text: 'Every queued job that failed at least once (retry_count ≥ 0) goes to the morgue with all its payloads and its error.',
    done: (a) => `Killed ${plural(a.killed, 'job')}: moved to the morgue`,
    count: 'retries',
  },
  delete_failed: {
    label: 'Delete failed', icon: 'trash', kind: 'danger',
    title: (q) => `Delete the failed jobs of ${q}?`,
    text: 'Every queued job that failed at least once (retry_count ≥ 0) is deleted with all its payloads. This cannot be undone.',
    done: (a) => `Deleted ${plural(a.deleted, 'job')}`,
    count: 'retries',
  },
};

// pauseButtons are Pause and Resume (docs/contract.md §9); the queue's
// header shows the one that applies (.queue-paused).
function pauseButtons(q, after) {
  const toggle = (paused) => async () => {
    try {
      await (paused ? api.pause(q) : api.resume(q));
      toast(paused ? `Paused ${q}: no new handler call starts on any node` : `Resumed ${q}`);
      clearBanner('action');
    } catch (e) {
      reportError('action', `${paused ? 'Pause' : 'Resume'} failed.`, e);
    }
    refreshLive();
    after();
  };
  return [
    button('Pause', {icon: 'pause', small: true, id: 'pause-queue', dataset: {pause: 'pause'}, write: true,
      title: 'Stop starting handler calls of this queue on every node; enqueues are still accepted', onclick: toggle(true)}),
    button('Resume', {icon: 'play', small: true, kind: 'primary', id: 'resume-queue', dataset: {pause: 'resume'}, write: true,
      title: 'Start handler calls of this queue again', onclick: toggle(false)}),
  ];
}

/** queueActions are the header's buttons of a queue: pause, resume and the queue actions. */
export function queueActions(q, after) {
  return [...pauseButtons(q, after), ...Object.entries(ACTIONS).map(([action, a]) => button(a.label, {
    icon: a.icon, kind: a.kind === 'danger' ? 'danger-outline' : null, small: true, dataset: {action}, write: true,
    onclick: async () => {
      const m = liveQueue(q);
      const note = a.count && m ? h('p', {class: 'modal-note'}, `${plural(m[a.count], 'job')} failed at least once right now.`) : null;
      const ok = await confirmDialog({title: a.title(q), message: [h('p', null, a.text), note],
        confirm: a.label, danger: a.kind === 'danger' || a.kind === 'warn'});
      if (!ok) return;
      try {
        const answer = await api.action(q, action);
        toast(a.done(answer));
        clearBanner('action');
      } catch (e) {
        reportError('action', `${a.label} failed.`, e);
      }
      refreshLive();
      after();
    },
  }))];
}

// ---- Job cards ----

/** deleteJob asks, deletes the queued entry of id and reports; true when deleted. */
export async function deleteJob(q, id, payloadCount) {
  const ok = await confirmDialog({
    title: 'Delete this job?',
    message: [h('p', null, 'The queued entry of ', idText(id, 'inline'),
      ` is deleted with ${payloadCount === undefined ? 'all its payloads' : plural(payloadCount, 'payload')}.`),
    h('p', {class: 'modal-note'}, 'An in-flight batch is never deleted: its handler settles it.')],
    confirm: 'Delete job', danger: true,
  });
  if (!ok) return false;
  try {
    await api.deleteJob(q, id);
    toast(`Deleted job ${id}`);
    clearBanner('action');
    refreshLive();
    return true;
  } catch (e) {
    reportError('action', 'Delete failed.', e);
    return false;
  }
}

// ---- /queues/{q}/processing ----

/** renderProcessing shows the in-flight batch of every shard, refreshed live. */
export function renderProcessing(root, {params: [q], signal}) {
  document.title = `${q} · processing · Orderly`;
  const list = h('div', {class: 'list'}, loading('Loading batches…'));
  mount(root, queueHeader(q, 'processing', signal), list);
  let last = '';
  every(2000, async () => {
    try {
      const {batches} = await api.processing(q, {signal});
      clearBanner('processing');
      const key = JSON.stringify(batches);
      if (signal.aborted || key === last) return;
      last = key;
      if (batches.length === 0) {
        mount(list, emptyState('inbox', 'Nothing in flight',
          'A batch shows here while a node runs its handler: the shard, the node that fetched it and its jobs.'));
        return;
      }
      mount(list, batches.map((b) => batchCard(q, b)));
    } catch (e) {
      if (!signal.aborted) reportError('processing', `Could not load the batches of ${q}.`, e);
    }
  }, signal);
  signal.addEventListener('abort', () => clearBanner('processing'));
}

function batchCard(q, b) {
  return h('section', {class: 'panel batch', dataset: {shard: b.shard}},
    h('div', {class: 'panel-head'},
      h('h2', null, `Shard ${b.shard}`),
      h('span', {class: 'chip owner', title: 'the node that fetched this batch'}, b.owner || '—'),
      h('span', {class: 'muted'}, `epoch ${b.epoch} · batch ${b.seq} · fetched `, timeText(b.fetched_at)),
      h('span', {class: 'spacer'}),
      h('span', {class: 'muted'}, plural(b.jobs.length, 'job'))),
    h('div', {class: 'panel-body flush'}, h('div', {class: 'table-wrap'}, h('table', {class: 'data'},
      h('thead', null, h('tr', null, h('th', null, 'Job'), h('th', null, 'Retry'), h('th', null, 'perform_at'),
        h('th', null, 'First payload'), h('th', {class: 'num'}, 'Payloads'))),
      h('tbody', null, b.jobs.map((j) => h('tr', {dataset: {id: j.id}},
        h('td', {class: 'idcell'}, h('a', {href: jobHref(q, j.id), class: 'id', title: j.id}, j.id)),
        h('td', null, retryBadge(j.retry_count)),
        h('td', null, timeText(j.perform_at)),
        h('td', {class: 'preview'}, j.payloads.length ? previewText(j.payloads[0]) : '—'),
        h('td', {class: 'num'}, num(j.payload_count)))))))));
}

function previewText(p) {
  const text = typeof p.payload_base64 === 'string' ? 'base64 ' + p.payload_base64 : JSON.stringify(p.payload);
  return h('code', {class: 'preview-code', title: text}, text);
}

// ---- /queues/{q}/job?id=... ----

/**
 * lookupJob reads one job. The ids "." and ".." cannot travel in a URL
 * path from a browser (the URL standard resolves "%2E%2E" as a dot
 * segment before the request leaves), so for those the page assembles the
 * answer from the listing (min = max = id) and the in-flight batches.
 */
async function lookupJob(q, id, signal) {
  if (!isDotId(id)) return api.job(q, id, {signal});
  const [page, proc] = await Promise.all([
    api.jobs(q, {order: 'id', min: id, max: id, limit: 1, payloads: 1000}, {signal}),
    api.processing(q, {signal}),
  ]);
  const queued = page.jobs.find((j) => j.id === id) || null;
  let processing = null, shard = null;
  for (const b of proc.batches) {
    const j = b.jobs.find((x) => x.id === id);
    if (j) {
      processing = {...j, owner: b.owner, epoch: b.epoch, seq: b.seq, fetched_at: b.fetched_at};
      shard = b.shard;
    }
  }
  if (!queued && !processing) throw new ApiError(404, `404 Not found: job ${id} is neither queued nor in flight`);
  return {queue: q, shard, id, in_flight: Boolean(processing), queued, processing};
}

/** renderJob shows one job: its queued entry and its in-flight record. */
export function renderJob(root, {params: [q], query, signal}) {
  const id = query.id ?? '';
  document.title = `${id} · ${q} · Orderly`;
  const body = h('div', {class: 'job-detail'}, loading('Loading the job…'));
  const load = async () => {
    try {
      const j = await lookupJob(q, id, signal);
      clearBanner('job');
      if (signal.aborted) return;
      mount(body, jobDetail(q, j, load));
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof ApiError && e.status === 404) {
        mount(body, emptyState('inbox', 'No such job',
          [`Nothing of ${JSON.stringify(id)} is queued, in flight or in the morgue of ${q}: it may have been processed or deleted. `,
            h('a', {href: queueHref(q, 'morgue')}, 'Open the morgue')]));
        return;
      }
      reportError('job', 'Could not load the job.', e);
      mount(body, emptyState('alert', 'The lookup failed', e.message));
    }
  };
  mount(root, queueHeader(q, 'job', signal), body);
  signal.addEventListener('abort', () => clearBanner('job'));
  load();
}

// The actions of one job (docs/contract.md §3.9), on its queued entry.
const JOB_ACTIONS = {
  perform_now: {
    label: 'Run now', icon: 'play', kind: null, id: 'perform-job',
    title: 'Run this job now?',
    text: 'The queued entry becomes due now; its retry count and last error are kept.',
    done: (id) => `Job ${id} is due now`,
  },
  kill: {
    label: 'Kill', icon: 'skull', kind: 'warn', id: 'kill-job',
    title: 'Kill this job?',
    text: 'Every queued payload of this id goes to the morgue with its last error; it can be requeued from there.',
    done: (id) => `Killed job ${id}: moved to the morgue`,
  },
};

function jobActionButtons(q, j, reload) {
  if (!j.queued) return [];
  return Object.entries(JOB_ACTIONS).map(([action, a]) => isDotId(j.id)
    ? button(a.label, {icon: a.icon, small: true, disabled: true, title: DOT_ID_NOTE, write: true})
    : button(a.label, {icon: a.icon, small: true, id: a.id, write: true, dataset: {jobAction: action}, onclick: async () => {
      const ok = await confirmDialog({title: a.title, message: [h('p', null, a.text),
        j.in_flight ? h('p', {class: 'modal-note'}, 'The call in flight for this id is not touched: it finishes and settles as usual.') : null],
      confirm: a.label, danger: a.kind === 'warn'});
      if (!ok) return;
      try {
        await api.jobAction(q, j.id, action);
        toast(a.done(j.id));
        clearBanner('action');
      } catch (e) {
        reportError('action', `${a.label} failed.`, e);
      }
      refreshLive();
      reload();
    }}));
}

/**
 * cancelButton cancels the job everywhere (docs/contract.md §3.13): its
 * queued payloads and, when a call holds it, that call, whichever node runs
 * it. The dialog offers to drop the payloads instead of killing them.
 */
function cancelButton(q, j, reload) {
  if (!j.queued && !j.in_flight) return null;
  if (isDotId(j.id)) return button('Cancel job', {icon: 'close', small: true, disabled: true, title: DOT_ID_NOTE, write: true});
  return button('Cancel job', {icon: 'close', small: true, id: 'cancel-job', write: true, onclick: async () => {
    const drop = h('input', {type: 'checkbox', id: 'cancel-delete'});
    const ok = await confirmDialog({title: 'Cancel this job?', message: [
      h('p', null, 'Its queued payloads go to the morgue with the error "cancelled", and a handler call in flight for it is stopped on whichever node runs it; the payloads of that call follow unless it already succeeded.'),
      h('p', null, h('label', {class: 'check'}, drop, ' Drop the payloads instead of moving them to the morgue')),
      j.in_flight ? h('p', {class: 'modal-note'}, 'Other ids of the same call go back to the queue.') : null],
    confirm: 'Cancel job', danger: true});
    if (!ok) return;
    try {
      const r = await api.cancelJob(q, j.id, drop.checked ? 'delete' : 'kill');
      const n = drop.checked ? r.deleted : r.killed;
      toast(`Cancelled job ${j.id}: ${plural(n, 'queued payload')} ${drop.checked ? 'dropped' : 'to the morgue'}${r.in_flight ? ', call in flight stopped' : ''}`);
      clearBanner('action');
    } catch (e) {
      reportError('action', 'Cancel failed.', e);
    }
    refreshLive();
    reload();
  }});
}

function jobDetail(q, j, reload) {
  const del = j.queued && isDotId(j.id)
    ? button('Delete queued entry', {icon: 'trash', kind: 'danger-outline', small: true, disabled: true, title: DOT_ID_NOTE, write: true})
    : j.queued
    ? button('Delete queued entry', {icon: 'trash', kind: 'danger-outline', small: true, id: 'delete-job', write: true, onclick: async () => {
      if (await deleteJob(q, j.id, j.queued.payload_count)) reload();
    }})
    : null;
  return [
    h('section', {class: 'panel job-title'},
      h('div', {class: 'panel-head'},
        h('div', {class: 'job-title-text'}, h('div', {class: 'meta-label'}, 'Job'), h('h2', {class: 'job-id-big', title: j.id}, j.id)),
        h('span', {class: 'spacer'}),
        j.shard !== null && j.shard !== undefined ? h('span', {class: 'chip'}, `shard ${j.shard}`) : null,
        j.queued ? h('span', {class: 'badge queued'}, 'queued') : null,
        j.in_flight ? h('span', {class: 'badge inflight'}, 'in flight') : null,
        j.morgue ? h('span', {class: 'badge dead'}, 'in the morgue') : null,
        j.finished ? h('span', {class: 'badge fresh'}, 'finished') : null,
        button('Refresh', {icon: 'refresh', small: true, onclick: reload}),
        jobActionButtons(q, j, reload),
        cancelButton(q, j, reload),
        del)),
    statePanel(j),
    h('div', {class: 'detail-cols'},
      recordPanel('Queued', j.queued, 'queued', 'Not queued: no payload of this id is waiting.'),
      recordPanel('In flight', j.processing, 'processing', 'Not in flight: no node is running this id.')),
    morguePanel(q, j.morgue),
    j.finished ? h('section', {class: 'panel record', dataset: {record: 'finished'}},
      h('div', {class: 'panel-head'}, h('h2', null, 'Finished'), h('span', {class: 'spacer'}),
        h('a', {class: 'btn small', href: queueHref(q, 'finished')}, 'All finished ids')),
      h('div', {class: 'panel-body'}, finishedCard(q, j.finished))) : null,
  ];
}

/**
 * morguePanel shows the id's morgue entry (its payloads whose retries ran
 * out, the last error, when its first and last payload died), or nothing
 * when it has none.
 */
function morguePanel(q, m) {
  if (!m) return null;
  const rows = [['updated_at', timeText(m.updated_at)]];
  if (m.first_at !== undefined && m.first_at !== null) rows.push(['first_at', timeText(m.first_at)]);
  rows.push(['payloads', num(m.payload_count)]);
  return h('section', {class: 'panel record', dataset: {record: 'morgue'}},
    h('div', {class: 'panel-head'}, h('h2', null, 'Morgue'), h('span', {class: 'spacer'}),
      h('a', {class: 'btn small', href: queueHref(q, 'morgue') + '?order=id&min=' + encodeURIComponent(m.id) + '&max=' + encodeURIComponent(m.id)}, 'Open in the morgue')),
    h('div', {class: 'panel-body'},
      h('dl', {class: 'kv'}, rows.map(([k, v]) => [h('dt', null, k), h('dd', null, v)])),
      m.error ? [h('div', {class: 'meta-label'}, 'Last error'), errorBlock(m.error)] : null,
      payloadList(m.payloads, m.payload_count)));
}

// A state longer than this (in characters of its text) shows its start and
// a "Show all".
const STATE_PREVIEW = 2000;

/**
 * stateText describes the lookup's state ({state} or {state_base64}, with
 * its version): {kind: 'json', text: pretty JSON} or {kind: 'base64',
 * text, bytes}.
 */
function stateText(st) {
  if (typeof st.state_base64 === 'string') {
    return {kind: 'base64', text: st.state_base64, bytes: base64Bytes(st.state_base64)};
  }
  return {kind: 'json', text: JSON.stringify(st.state, null, 2)};
}

/**
 * statePanel shows the entity state of a stateful queue's id (its bytes,
 * version and timer, docs/contract.md §11), or nothing when the id has
 * neither state nor timer. An id whose payloads are all done keeps its
 * state: the panel says so.
 */
function statePanel(j) {
  const timer = j.timer;
  // A deleted state keeps its version (a tombstone): shown as such, with no bytes.
  const deleted = Boolean(j.state && j.state.deleted);
  const st = j.state && !deleted ? j.state : null;
  if (!j.state && (timer === undefined || timer === null)) return null;
  const rows = [
    ['version', st ? String(st.version)
      : deleted ? h('span', {class: 'muted'}, `${j.state.version} (state deleted)`)
      : h('span', {class: 'muted'}, '0 (no state)')],
    ['timer', timer === undefined || timer === null
      ? h('span', {class: 'muted'}, 'none')
      : h('span', {class: 'state-timer'}, timeText(timer))],
  ];
  let block = null;
  if (st) {
    const t = stateText(st);
    rows.splice(1, 0, ['size', t.kind === 'base64' ? plural(t.bytes, 'byte') : plural(new TextEncoder().encode(JSON.stringify(st.state)).length, 'byte')]);
    const long = t.text.length > STATE_PREVIEW;
    const pre = h('pre', {class: ['code', t.kind, 'state-value']}, long ? t.text.slice(0, STATE_PREVIEW) + '…' : t.text);
    const showAll = long ? h('button', {type: 'button', class: 'btn small show-all', id: 'state-show-all', onclick: () => {
      pre.textContent = t.text;
      showAll.remove();
    }}, `Show all ${num(t.text.length)} characters`) : null;
    block = h('div', {class: 'payload state-block'},
      h('div', {class: 'payload-cap'},
        h('span', {class: 'payload-kind'}, t.kind === 'json' ? 'JSON' : `binary · ${plural(t.bytes, 'byte')} · base64`)),
      pre, showAll);
  }
  const gone = !j.queued && !j.processing;
  return h('section', {class: 'panel record state-panel', dataset: {record: 'state'}},
    h('div', {class: 'panel-head'}, h('h2', null, 'State')),
    h('div', {class: 'panel-body'},
      gone && (st || !deleted) ? h('p', {class: 'state-note', id: 'state-remains'},
        st ? 'No payload of this id is queued or in flight: its jobs are done or were deleted, and its state remains. ' +
          'Deleting a job keeps its state; delete the state itself with orderly state set --delete or a PUT of "state": null.'
          : 'No payload of this id is queued or in flight; its timer brings it back to the handler at its time.')
        : null,
      h('dl', {class: 'kv'}, rows.map(([k, v]) => [h('dt', null, k), h('dd', null, v)])),
      block));
}

function recordPanel(title, r, key, emptyText) {
  if (!r) {
    return h('section', {class: 'panel record', dataset: {record: key}},
      h('div', {class: 'panel-head'}, h('h2', null, title)),
      h('div', {class: 'panel-body'}, h('div', {class: 'muted'}, emptyText)));
  }
  const rows = [
    ['perform_at', timeText(r.perform_at)],
    ['retry_count', [String(r.retry_count), ' ', retryBadge(r.retry_count)]],
  ];
  // The id's priority (docs/contract.md §3.16), shown when it is not 1.
  if (r.priority) rows.push(['priority', String(r.priority)]);
  if (r.owner !== undefined) {
    rows.push(['owner', h('span', {class: 'chip owner'}, r.owner || '—')],
      ['lease epoch', String(r.epoch)], ['batch', String(r.seq)], ['fetched_at', timeText(r.fetched_at)]);
  }
  rows.push(['payloads', num(r.payload_count)]);
  return h('section', {class: 'panel record', dataset: {record: key}},
    h('div', {class: 'panel-head'}, h('h2', null, title)),
    h('div', {class: 'panel-body'},
      h('dl', {class: 'kv'}, rows.map(([k, v]) => [h('dt', null, k), h('dd', null, v)])),
      r.error ? [h('div', {class: 'meta-label'}, 'Last error'), errorBlock(r.error)] : null,
      payloadList(r.payloads, r.payload_count)));
}
