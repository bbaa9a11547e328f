// The overview (/): totals, charts of lag and throughput, and the table of
// queues, all from the shared live feed.

import {h, mount} from './dom.js';
import {compact, duration, localTime, num, rate} from './format.js';
import {live, subscribe} from './live.js';
import {drawReshard, emptyState, loading, queueHref, timeText} from './components.js';
import {api} from './api.js';
import {lineChart} from './chart.js';

const CARDS = [
  // [key, label, hint]
  ['lag', 'Lag', 'max wait'],
  ['busy', 'Busy', 'in flight'],
  ['length', 'Queued', 'waiting'],
  ['fresh', 'Fresh', 'never failed'],
  ['retries', 'Retries', 'will retry'],
  ['morgue_length', 'Morgue', 'out of retries'],
  ['processed', 'Processed', 'all time'],
  ['failed', 'Failed', 'all time'],
];

// The table's columns: [key, label, link(queue) or null]. Links follow
// Lowkiq's: queued to the listing, fresh and retries to the listing
// filtered by retry_count, busy to processing, morgue to the morgue.
const COLUMNS = [
  ['length', 'Queued', (q) => queueHref(q)],
  ['fresh', 'Fresh', (q) => queueHref(q, '', {order: 'retry_count', max: '-1'})],
  ['retries', 'Retries', (q) => queueHref(q, '', {order: 'retry_count', min: '0'})],
  ['morgue_length', 'Morgue', (q) => queueHref(q, 'morgue')],
  ['lag', 'Lag', null],
  ['busy', 'Busy', (q) => queueHref(q, 'processing')],
  ['processed', 'Processed', null],
  ['failed', 'Failed', null],
];

/** totals sums the queues' metrics; lag is the largest. */
export function totals(queues) {
  const t = {lag: 0, busy: 0, length: 0, fresh: 0, retries: 0, morgue_length: 0, processed: 0, failed: 0};
  for (const q of queues) {
    for (const k of Object.keys(t)) t[k] = k === 'lag' ? Math.max(t.lag, q.lag) : t[k] + q[k];
  }
  return t;
}

// The charts' time ranges: [label, seconds]. Beyond the minutes the page
// polled itself, they draw the node's per-minute history
// (GET /api/v1/history), so they survive a reload and show a day.
const RANGES = [['5m', 300], ['1h', 3600], ['6h', 21600], ['24h', 86400]];
const DEFAULT_RANGE = 3600;
// How often the history is read again: a new sample comes each minute.
const HISTORY_MS = 30000;

/**
 * historySeries turns the history's minutes into chart points: the lag at
 * each turn of the minute, and the processed and failed of the minute
 * before it as per-second averages.
 */
export function historySeries(minutes) {
  const lag = [], processed = [], failed = [];
  for (const m of minutes) {
    lag.push({t: m.t, v: m.lag});
    if (m.processed !== null) processed.push({t: m.t, v: m.processed / 60});
    if (m.failed !== null) failed.push({t: m.t, v: m.failed / 60});
  }
  return {lag, processed, failed};
}

/** rates turns the samples' counters into per-second deltas between polls. */
export function rates(samples) {
  const processed = [], failed = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1], b = samples[i];
    const dt = b.t - a.t;
    if (dt <= 0) continue;
    // A counter that went down (a queue was recreated) counts as no progress.
    processed.push({t: b.t, v: Math.max(0, b.processed - a.processed) / dt});
    failed.push({t: b.t, v: Math.max(0, b.failed - a.failed) / dt});
  }
  return {processed, failed};
}

// fillCell shows one metric of a queue in its table cell (a link when
// there is something to look at), touching the DOM only on a change.
function fillCell(td, q, k, link) {
  const v = q[k];
  const text = k === 'lag' ? duration(v) : num(v);
  const href = link && v > 0 ? link(q.name) : '';
  if (td.dataset.text === text && td.dataset.href === href) return;
  td.dataset.text = text;
  td.dataset.href = href;
  td.title = k === 'lag' ? (q.oldest_due ? `${v} s · oldest due ${localTime(q.oldest_due)}` : 'nothing queued') : num(v);
  td.className = ['num', v === 0 && 'zero', k === 'morgue_length' && v > 0 && 'bad', k === 'retries' && v > 0 && 'warn']
    .filter(Boolean).join(' ');
  mount(td, href ? h('a', {href}, text) : text);
}

export function render(root, {signal}) {
  document.title = 'Overview · Orderly';
  const cardValues = {};
  const cards = h('section', {class: 'cards', 'aria-label': 'Totals'}, CARDS.map(([k, label, hint]) =>
    h('div', {class: ['card', `card-${k}`], dataset: {total: k}},
      h('div', {class: 'card-label'}, label),
      cardValues[k] = h('div', {class: 'card-value'}, '—'),
      h('div', {class: 'card-hint'}, hint))));

  // The range shown, and the history of the node behind it.
  let range = DEFAULT_RANGE;
  let hist = {lag: [], processed: [], failed: []};
  let histAt = 0;
  const loadHistory = () => {
    histAt = Date.now();
    api.history(Math.min(1440, Math.ceil(range / 60)), {signal}).then((a) => {
      hist = historySeries(a.minutes || []);
      draw();
    }).catch(() => {}); // a node without history: the charts show what the page polls
  };
  const rangeSwitch = h('div', {class: 'seg chart-range', role: 'group', 'aria-label': 'Time range', id: 'chart-range'},
    RANGES.map(([label, sec]) => h('button', {type: 'button', class: ['seg-btn', sec === range && 'active'],
      'aria-pressed': String(sec === range), dataset: {range: label}, onclick: () => {
        range = sec;
        for (const b of rangeSwitch.querySelectorAll('.seg-btn')) {
          const on = b.dataset.range === label;
          b.classList.toggle('active', on);
          b.setAttribute('aria-pressed', String(on));
        }
        loadHistory();
        draw();
      }}, label)));

  const lagChart = lineChart({format: (v) => duration(v), label: 'Lag over time'});
  const tputChart = lineChart({format: rate, label: 'Processed and failed per second'});
  const lagNow = h('span', {class: 'legend-value'});
  const procNow = h('span', {class: 'legend-value'});
  const failNow = h('span', {class: 'legend-value'});
  const charts = h('section', {class: 'charts'},
    h('div', {class: 'panel'},
      h('div', {class: 'panel-head'}, h('h2', null, 'Lag'),
        h('div', {class: 'legend'}, h('span', {class: 'swatch s0'}), 'max over queues', lagNow)),
      lagChart.el),
    h('div', {class: 'panel'},
      h('div', {class: 'panel-head'}, h('h2', null, 'Throughput'),
        h('div', {class: 'legend'},
          h('span', {class: 'swatch s0'}), 'processed/s', procNow,
          h('span', {class: 'swatch s1'}), 'failed/s', failNow)),
      tputChart.el));

  const tableBox = h('div', {class: 'panel-body flush'}, loading('Loading queues…'));
  const queueCount = h('span', {class: 'muted'});
  const table = h('section', {class: 'panel'},
    h('div', {class: 'panel-head'}, h('h2', null, 'Queues'), queueCount),
    tableBox);

  // Periodic jobs (docs/contract.md §9): shown when the node has any, with
  // their last and next tick, refreshed with the queues.
  const periodicBox = h('div', {class: 'panel-body flush'});
  const periodic = h('section', {class: 'panel', id: 'periodic', hidden: true},
    h('div', {class: 'panel-head'}, h('h2', null, 'Periodic jobs'), h('span', {class: 'muted'}, 'enqueued once per tick, cluster-wide')),
    periodicBox);
  let periodicAt = 0;
  const drawPeriodic = () => {
    if (Date.now() - periodicAt < 5000) return;
    periodicAt = Date.now();
    api.periodic({signal}).then((a) => {
      const jobs = (a && a.periodic) || [];
      periodic.hidden = jobs.length === 0;
      if (jobs.length === 0) return;
      mount(periodicBox, h('div', {class: 'table-wrap'}, h('table', {class: 'data periodic'},
        h('thead', null, h('tr', null, ['Name', 'Queue', 'Schedule', 'Id', 'Last tick', 'Next tick'].map((l) => h('th', null, l)))),
        h('tbody', null, jobs.map((p) => h('tr', {dataset: {periodic: p.name}},
          h('td', {class: 'strong'}, p.name),
          h('td', null, h('a', {href: queueHref(p.queue)}, p.queue)),
          h('td', {class: 'mono'}, p.schedule),
          h('td', {class: 'mono'}, p.id),
          h('td', {dataset: {col: 'last'}}, p.last_tick ? timeText(p.last_tick) : '—'),
          h('td', {dataset: {col: 'next'}}, p.next_tick ? timeText(p.next_tick) : '—')))))));
    }).catch(() => {}); // the queues' feed reports a node that does not answer
  };

  mount(root,
    h('div', {class: 'page-head'}, h('div', {class: 'page-title'}, h('h1', null, 'Overview'),
      h('span', {class: 'muted'}, 'Every queue of the cluster, live')),
    h('div', {class: 'page-actions'}, rangeSwitch)),
    cards, charts, table, periodic);

  let rowsKey = '';   // the queue names of the rows built
  let cells = new Map(); // queue name -> {col: td}
  const draw = () => {
    const qs = live.queues;
    if (!qs) return;
    drawPeriodic();
    const t = totals(qs);
    for (const [k] of CARDS) {
      const el = cardValues[k];
      el.textContent = k === 'lag' ? duration(t.lag) : compact(t[k]);
      el.title = k === 'lag' ? `${t.lag} s` : num(t[k]);
      el.classList.toggle('bad', k === 'morgue_length' && t[k] > 0);
    }
    queueCount.textContent = qs.length === 1 ? '1 queue' : `${qs.length} queues`;

    // The history's minutes, then what the page polled since the last of
    // them; the window grows from a minute to the range as points
    // accumulate.
    if (Date.now() - histAt > HISTORY_MS) loadHistory();
    const now = live.updatedAt;
    const since = now - range;
    const lastHist = hist.lag.length ? hist.lag.at(-1).t : -Infinity;
    const after = (pts) => pts.filter((p) => p.t > lastHist && p.t >= since);
    const before = (pts) => pts.filter((p) => p.t >= since);
    const r = rates(live.samples);
    const lagPts = [...before(hist.lag), ...after(live.samples.map((s) => ({t: s.t, v: s.lag})))];
    const procPts = [...before(hist.processed), ...after(r.processed)];
    const failPts = [...before(hist.failed), ...after(r.failed)];
    const first = Math.min(lagPts.length ? lagPts[0].t : now, procPts.length ? procPts[0].t : now);
    const t0 = now - Math.min(range, Math.max(60, now - first));
    lagChart.update({series: [{label: 'lag', points: lagPts}], t0, t1: now});
    tputChart.update({series: [{label: 'processed/s', points: procPts}, {label: 'failed/s', points: failPts}], t0, t1: now});
    lagNow.textContent = duration(t.lag);
    procNow.textContent = r.processed.length ? rate(r.processed.at(-1).v) : '—';
    failNow.textContent = r.failed.length ? rate(r.failed.at(-1).v) : '—';

    // The rows are built when the queues change and updated in place
    // otherwise, so that hovering and selecting text survive the refreshes.
    const names = JSON.stringify(qs.map((q) => [q.name, q.shards]));
    if (names !== rowsKey) {
      rowsKey = names;
      cells = new Map();
      if (qs.length === 0) {
        mount(tableBox, emptyState('inbox', 'No queues yet',
          'Queues appear here once a node registers them: start a node with workers, or enqueue through the API.'));
        return;
      }
      mount(tableBox, h('div', {class: 'table-wrap'}, h('table', {class: 'data queues'},
        h('thead', null, h('tr', null, h('th', null, 'Queue'), h('th', {class: 'num'}, 'Shards'),
          COLUMNS.map(([, label]) => h('th', {class: 'num'}, label)))),
        h('tbody', null, qs.map((q) => {
          const row = {};
          cells.set(q.name, row);
          return h('tr', {dataset: {queue: q.name}},
            h('td', {class: 'qcell'}, h('a', {href: queueHref(q.name), class: 'strong', title: q.name}, q.name),
              row.paused = h('span', {class: 'badge paused', hidden: true, title: 'No handler call starts'}, 'paused'),
              row.reshard = h('span', {class: 'badge reshard', hidden: true})),
            h('td', {class: 'num muted'}, num(q.shards)),
            COLUMNS.map(([k]) => row[k] = h('td', {class: 'num', dataset: {col: k}})));
        })))));
    }
    for (const q of qs) {
      const row = cells.get(q.name);
      row.paused.hidden = !q.paused;
      drawReshard(row.reshard, q);
      for (const [k, , link] of COLUMNS) fillCell(row[k], q, k, link);
    }
  };
  draw();
  const off = subscribe(draw);
  signal.addEventListener('abort', () => {
    off();
    lagChart.destroy();
    tputChart.destroy();
  });
}
