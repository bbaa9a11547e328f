// Building blocks shared by the pages: banners, toasts, the confirmation
// dialog, job cards, payloads, times, empty states and the queue header.

import {href} from './base.js';
import {h, icon, mount} from './dom.js';
import {seg} from './api.js';
import {compact, duration, localTime, looksLikeTime, num, payloadText, plural, relative} from './format.js';
import {live, queue as liveQueue, subscribe} from './live.js';

// ---- Banners: one per failing source, cleared when it recovers ----

const banners = new Map();

/** setBanner shows (or updates) the error banner of a source: "Could not load queues". */
export function setBanner(key, title, err) {
  banners.set(key, {title, message: err instanceof Error ? err.message : String(err)});
  drawBanners();
}

/** clearBanner removes the banner of a source. */
export function clearBanner(key) {
  if (banners.delete(key)) drawBanners();
}

function drawBanners() {
  const box = document.getElementById('banners');
  if (!box) return;
  mount(box, [...banners].map(([key, b]) =>
    h('div', {class: 'banner', role: 'alert', dataset: {banner: key}},
      icon('alert'),
      h('div', {class: 'banner-text'}, h('strong', null, b.title), ' ', h('span', null, b.message)),
    )));
}

/** reportError puts err on the source's banner, or clears it when err is null. */
export function reportError(key, title, err) {
  if (err) setBanner(key, title, err);
  else clearBanner(key);
}

// ---- Toasts ----

/** toast shows a short message at the bottom of the screen. */
export function toast(message, kind = 'ok') {
  let box = document.getElementById('toasts');
  if (!box) {
    box = h('div', {id: 'toasts', class: 'toasts', role: 'status', 'aria-live': 'polite'});
    document.body.append(box);
  }
  const t = h('div', {class: ['toast', kind]}, icon(kind === 'error' ? 'alert' : 'requeue'), h('span', null, message));
  box.append(t);
  setTimeout(() => t.classList.add('leaving'), 4500);
  setTimeout(() => t.remove(), 5000);
}

// ---- Confirmation dialog ----

/**
 * confirmDialog asks before an action: it resolves true when the operator
 * confirms. message may be a string or nodes.
 */
export function confirmDialog({title, message, confirm = 'Confirm', danger = false}) {
  return new Promise((resolve) => {
    const ok = h('button', {type: 'submit', class: ['btn', danger ? 'danger' : 'primary'], id: 'confirm-ok'}, confirm);
    const cancel = h('button', {type: 'button', class: 'btn', id: 'confirm-cancel'}, 'Cancel');
    const form = h('form', {class: 'modal-body'},
      h('h2', null, title),
      h('div', {class: 'modal-text'}, message),
      h('div', {class: 'modal-actions'}, cancel, ok));
    const dlg = h('dialog', {class: 'modal', id: 'confirm-dialog'}, form);
    let answer = false;
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      answer = true;
      dlg.close();
    });
    cancel.addEventListener('click', () => dlg.close());
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(answer);
    });
    document.body.append(dlg);
    dlg.showModal();
    // Focus the safe choice for destructive actions.
    (danger ? cancel : ok).focus();
  });
}

// ---- Small pieces ----

/** queueHref is the dashboard path of a queue's page: tab '' (jobs), 'processing', 'morgue' or 'finished'. */
export function queueHref(q, tab = '', params) {
  let p = href('/queues/' + seg(q) + (tab ? '/' + tab : ''));
  if (params) {
    const s = new URLSearchParams(params).toString();
    if (s) p += '?' + s;
  }
  return p;
}

/**
 * jobHref is the dashboard path of one job. The id goes in the query: a
 * path segment "." or ".." (even escaped as %2E) is resolved away by the
 * browser's URL parser, a query value is kept as it is.
 */
export const jobHref = (q, id) => href('/queues/' + seg(q) + '/job?id=' + encodeURIComponent(id));

/** idText shows an id in monospace, truncated with the full id as tooltip. */
export const idText = (id, cls) => h('span', {class: ['id', cls], title: id}, id === '' ? '(empty)' : id);

/** timeText shows unix seconds as local time and relative to now. */
export function timeText(unix) {
  if (unix === null || unix === undefined) return h('span', {class: 'muted'}, '—');
  return h('span', {class: 'time', title: `${localTime(unix)} (unix ${unix})`},
    h('span', {class: 'time-abs'}, localTime(unix)), ' ', h('span', {class: 'time-rel'}, relative(unix)));
}

/** retryBadge shows retry_count: "fresh" for -1, else "retry N". */
export function retryBadge(rc) {
  return rc < 0
    ? h('span', {class: 'badge fresh', title: 'retry_count -1: never failed'}, 'fresh')
    : h('span', {class: 'badge retry', title: `retry_count ${rc}: failed ${rc + 1} time${rc ? 's' : ''}`}, `retry ${rc}`);
}

/** emptyState is the friendly block shown instead of an empty list. */
export function emptyState(iconName, title, text) {
  return h('div', {class: 'empty'}, icon(iconName, 'empty-icon'), h('div', {class: 'empty-title'}, title),
    text ? h('div', {class: 'empty-text'}, text) : null);
}

/** loading is the placeholder of a panel that waits for its first answer. */
export const loading = (what = 'Loading…') => h('div', {class: 'loading'}, h('span', {class: 'spinner'}), what);

/** statValue renders a count compactly, with the exact number as tooltip. */
export const statValue = (n) => h('span', {title: num(n)}, compact(n));

/** scoreText renders a payload score, with its time when it looks like one. */
export function scoreText(score) {
  return h('span', {class: 'score'}, 'score ', h('span', {class: 'num'}, String(score)),
    looksLikeTime(score) ? h('span', {class: 'score-time'}, localTime(score)) : null);
}

/**
 * headerRow renders a payload's headers (docs/contract.md §10) compactly,
 * one "key value" pair after the other, keys sorted; nothing when it has
 * none.
 */
export function headerRow(headers) {
  const keys = headers ? Object.keys(headers).sort() : [];
  if (keys.length === 0) return null;
  return h('div', {class: 'payload-headers', title: 'headers'},
    keys.map((k) => h('span', {class: 'hdr'}, h('span', {class: 'hdr-k'}, k), h('span', {class: 'hdr-v'}, headers[k]))));
}

/** payloadBlock renders one payload: JSON pretty-printed, or base64 with its size, and its headers. */
export function payloadBlock(p, i) {
  const t = payloadText(p);
  return h('div', {class: 'payload', dataset: {payload: i}},
    h('div', {class: 'payload-cap'},
      h('span', {class: 'payload-kind'}, t.kind === 'json' ? 'JSON' : `binary · ${plural(t.bytes, 'byte')} · base64`),
      scoreText(p.score),
      // Its expiry (docs/contract.md §3.15), when it has one.
      p.expires_at ? h('span', {class: 'payload-expires', title: 'expires_at'}, `expires ${localTime(p.expires_at)}`) : null),
    headerRow(p.headers),
    h('pre', {class: ['code', t.kind]}, t.text));
}

// A payload list longer than this shows its first ones and a "Show all".
const COLLAPSE_AFTER = 5;

/**
 * payloadList renders a job's payloads and, when some are not shown, a
 * note. A long list shows its first COLLAPSE_AFTER payloads and a button
 * that shows the rest.
 */
export function payloadList(payloads, count, moreHref) {
  const shown = payloads || [];
  const more = count - shown.length;
  const head = shown.slice(0, COLLAPSE_AFTER), tail = shown.slice(COLLAPSE_AFTER);
  const list = h('div', {class: 'payloads'}, head.map(payloadBlock));
  if (tail.length > 0) {
    const showAll = h('button', {type: 'button', class: 'btn small show-all', onclick: () => {
      showAll.replaceWith(...tail.map(payloadBlock));
    }}, `Show all ${num(shown.length)} payloads`);
    list.append(showAll);
  }
  if (more > 0) {
    list.append(h('div', {class: 'payloads-more'},
      `${plural(more, 'more payload')} not shown`,
      moreHref ? [' · ', h('a', {href: moreHref}, 'open the job')] : null));
  }
  return list;
}

/** errorBlock renders a job's last error, or nothing. */
export const errorBlock = (err) => err ? h('pre', {class: 'job-error', title: 'last error'}, err) : null;

/**
 * every runs fn now and then every ms until signal aborts, never
 * overlapping, and not while the tab is hidden.
 */
export function every(ms, fn, signal) {
  let timer = 0;
  const tick = async () => {
    if (signal.aborted) return;
    if (!document.hidden) await fn();
    if (!signal.aborted) timer = setTimeout(tick, ms);
  };
  const onShow = () => {
    if (!document.hidden) {
      clearTimeout(timer);
      tick();
    }
  };
  document.addEventListener('visibilitychange', onShow);
  signal.addEventListener('abort', () => {
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onShow);
  });
  tick();
}

/**
 * button builds a button with an optional icon. A write button changes
 * state: it carries data-write and is hidden when the credentials in use
 * can only read (body.read-only; see app.js).
 */
export function button(label, {icon: ic, kind, onclick, title, id, small, disabled, dataset, write} = {}) {
  if (write) dataset = {...dataset, write: ''};
  return h('button', {type: 'button', class: ['btn', kind, small && 'small'], onclick, title, id, disabled, dataset},
    ic ? icon(ic) : null, label);
}

// ---- The queue header: breadcrumb, title, live metrics, actions, tabs ----

const HEADER_STATS = [
  ['length', 'Queued'], ['fresh', 'Fresh'], ['retries', 'Retries'], ['morgue_length', 'Morgue'],
  ['lag', 'Lag'], ['busy', 'Busy'], ['processed', 'Processed'], ['failed', 'Failed'],
  // The outcomes handlers chose, the cancels that stopped a call and the
  // payloads that expired before a fetch (docs/contract.md §3.11, §3.13,
  // §3.15); absent from older nodes' answers.
  ['snoozed', 'Snoozed'], ['discarded', 'Discarded'], ['cancelled', 'Cancelled'], ['expired', 'Expired'],
];

const TAB_NAMES = {processing: 'Processing', morgue: 'Morgue', finished: 'Finished'};

/**
 * drawLimits shows a queue's max_concurrency and rate_limit (docs/contract.md
 * §9) as the answering node is configured, or that it has none, and on a
 * pull queue its waiting workers and held leases on that node (§6.6).
 */
function drawLimits(el, m) {
  const r = m.rate_limit;
  const p = m.pull;
  const key = JSON.stringify([m.max_concurrency || 0, r || null, p || null]);
  if (el.dataset.key === key) return;
  el.dataset.key = key;
  const chip = (k, text, title) => h('span', {class: 'chip limit', dataset: {limit: k}, title},
    h('span', {class: 'limit-key'}, k), ' ', text);
  mount(el,
    m.max_concurrency > 0
      ? chip('max_concurrency', num(m.max_concurrency), `At most ${plural(m.max_concurrency, 'handler call')} of this queue at once, cluster-wide`)
      : chip('max_concurrency', 'none', 'No cluster-wide limit on the calls running at once (as the answering node is configured)'),
    r
      ? chip('rate_limit', `${num(r.per_second)}/s, burst ${num(r.burst)}`,
        `Handler calls start at most ${num(r.per_second)} a second cluster-wide, in bursts of at most ${num(r.burst)}`)
      : chip('rate_limit', 'none', 'No rate limit (as the answering node is configured)'),
    p ? chip('pull', `${num(p.waiting_workers)} waiting, ${num(p.held_leases)} held`,
      `Pull workers on the answering node: ${plural(p.waiting_workers, 'pull')} waiting for a batch, ${plural(p.held_leases, 'batch', 'batches')} held under a lease, ${plural(p.pending_batches, 'batch', 'batches')} waiting for a pull`) : null);
}

/** drawReshard shows a running reshard's progress in el; hidden while none runs. */
export function drawReshard(el, m) {
  const r = m.reshard;
  el.hidden = !r;
  if (!r) return;
  el.textContent = `resharding ${num(r.from)} \u2192 ${num(r.to)}: ${num(r.moved)} moved, ${num(r.left)} left`;
  el.title = `Moving from ${plural(r.from, 'shard')} to ${r.to}: the nodes move the queued ids of the old shards ` +
    `(${num(r.drained_shards)} of ${num(r.from)} drained); new ids go to the new shards. ` +
    'Listings and actions on ids still moving answer "retry shortly".';
}

/**
 * queueHeader is the top of every page of a queue. tab is 'jobs',
 * 'processing', 'morgue', 'finished' or 'job'; actions are extra nodes for the right
 * side. It follows the live feed until signal aborts.
 */
export function queueHeader(q, tab, signal, actions) {
  const values = {};
  const stats = h('div', {class: 'qstats'}, HEADER_STATS.map(([k, label]) =>
    h('div', {class: 'qstat', dataset: {stat: k}},
      h('div', {class: 'qstat-label'}, label),
      values[k] = h('div', {class: 'qstat-value'}, '—'))));
  const counts = {};
  const tabLink = (key, label, href, stat) => h('a', {class: ['tab', tab === key && 'active'], href, dataset: {tab: key}},
    label, stat ? counts[stat] = h('span', {class: 'tab-count'}, '') : null);
  const shards = h('span', {class: 'muted'});
  const pausedBadge = h('span', {class: 'badge paused', id: 'queue-paused', hidden: true,
    title: 'No node starts a handler call of this queue; enqueues are accepted'}, 'paused');
  const reshardBadge = h('span', {class: 'badge reshard', id: 'queue-reshard', hidden: true});
  const limits = h('span', {class: 'qlimits', id: 'queue-limits'});
  const sep = () => h('span', {class: 'sep'}, '/');
  const head = h('div', {class: 'qhead'},
    h('nav', {class: 'crumbs', 'aria-label': 'Breadcrumb'}, h('a', {href: href('/')}, 'Overview'), sep(), 'Queues', sep(),
      tab === 'jobs' ? h('span', {class: 'crumb-queue', 'aria-current': 'page', title: q}, q)
        : h('a', {class: 'crumb-queue', href: queueHref(q), title: q}, q),
      tab === 'job' ? [sep(), 'Job'] : tab !== 'jobs' ? [sep(), TAB_NAMES[tab]] : null),
    h('div', {class: 'page-head'},
      h('div', {class: 'page-title'}, h('h1', {class: 'qname', title: q}, q), pausedBadge, reshardBadge, shards, limits),
      h('div', {class: 'page-actions'}, actions)),
    stats,
    h('nav', {class: 'tabs'},
      tabLink('jobs', 'Jobs', queueHref(q), 'length'),
      tabLink('processing', 'Processing', queueHref(q, 'processing'), 'busy'),
      tabLink('morgue', 'Morgue', queueHref(q, 'morgue'), 'morgue_length'),
      tabLink('finished', 'Finished', queueHref(q, 'finished'))));

  const unknown = h('p', {class: 'notice', id: 'unknown-queue', hidden: true},
    icon('alert'), h('span', null, `No queue named ${JSON.stringify(q)} is registered: there is nothing to act on. `,
      h('a', {href: href('/')}, 'See the queues')));
  head.append(unknown);
  const draw = () => {
    const m = liveQueue(q);
    // Actions show only once the queue is known to exist.
    const missing = live.queues !== null && !m;
    unknown.hidden = !missing;
    head.classList.toggle('queue-unknown', !m);
    if (!m) return;
    pausedBadge.hidden = !m.paused;
    head.classList.toggle('queue-paused', !!m.paused);
    shards.textContent = plural(m.shards, 'shard');
    drawReshard(reshardBadge, m);
    drawLimits(limits, m);
    for (const [k] of HEADER_STATS) {
      const el = values[k];
      if (k === 'lag') {
        el.textContent = duration(m.lag);
        el.title = m.oldest_due ? `oldest due ${localTime(m.oldest_due)}` : 'nothing queued';
      } else {
        el.textContent = compact(m[k] ?? 0);
        el.title = num(m[k] ?? 0);
      }
      el.classList.toggle('warn', (k === 'morgue_length' || k === 'retries') && m[k] > 0);
    }
    for (const [k, el] of Object.entries(counts)) el.textContent = compact(m[k]);
  };
  draw();
  const off = subscribe(draw);
  signal.addEventListener('abort', off);
  return head;
}

/** selfName is the node that answers, for the header. */
export const selfName = () => live.self;
