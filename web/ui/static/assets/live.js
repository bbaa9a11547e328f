// The live feed: one poller of GET /api/v1/queues shared by every page (the
// sidebar, the overview, the queue headers), the history of totals behind
// the overview's charts, and the name of the node that answers.

import {api} from './api.js';
import {nowSec} from './format.js';

/** POLL_MS is the refresh period of the live views. */
export const POLL_MS = 1500;
/** WINDOW_SEC is how much history the charts keep. */
export const WINDOW_SEC = 300;

/**
 * live is the shared state. queues is null until the first answer; error
 * is the ApiError of the last poll (null when it worked); samples are the
 * totals of each successful poll within WINDOW_SEC: {t, lag, processed,
 * failed}.
 */
export const live = {
  queues: null,
  error: null,
  updatedAt: 0,
  samples: [],
  self: '',
  paused: false,
  // embedded is true when the answering node runs on the embedded
  // in-memory store (GET /api/v1/cluster).
  embedded: false,
};

const listeners = new Set();

/** subscribe calls fn after every poll; it returns the unsubscribe func. */
export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function emit() {
  for (const fn of [...listeners]) {
    try {
      fn(live);
    } catch (e) {
      console.error(e);
    }
  }
}

/** queue returns the latest metrics of the named queue, or undefined. */
export const queue = (name) => (live.queues || []).find((q) => q.name === name);

let timer = 0;
let running = null;

async function poll() {
  clearTimeout(timer);
  if (document.hidden) {
    // Nobody is looking: stop polling until the tab is shown again.
    live.paused = true;
    emit();
    return;
  }
  live.paused = false;
  try {
    const {queues} = await api.queues();
    live.queues = queues;
    live.error = null;
    live.updatedAt = nowSec();
    record(queues, live.updatedAt);
  } catch (e) {
    live.error = e;
  }
  emit();
  timer = setTimeout(refresh, POLL_MS);
}

function record(queues, t) {
  let lag = 0, processed = 0, failed = 0;
  for (const q of queues) {
    lag = Math.max(lag, q.lag);
    processed += q.processed;
    failed += q.failed;
  }
  const s = live.samples;
  s.push({t, lag, processed, failed});
  while (s.length > 2 && s[0].t < t - WINDOW_SEC) s.shift();
}

/** refresh polls now (after an action, say); concurrent calls share one poll. */
export function refresh() {
  if (!running) running = poll().finally(() => { running = null; });
  return running;
}

let selfTimer = 0;

/** refreshSelf reads the name of the node that answers the API. */
export async function refreshSelf() {
  clearTimeout(selfTimer);
  try {
    const c = await api.cluster();
    if (Boolean(c.embedded_store) !== live.embedded) {
      live.embedded = Boolean(c.embedded_store);
      emit();
    }
    setSelf(c.self);
  } catch { /* the queue poller reports failures */ }
  selfTimer = setTimeout(refreshSelf, 15000);
}

/** setSelf records the answering node (the cluster page reads it too). */
export function setSelf(name) {
  if (name !== live.self) {
    live.self = name || '';
    emit();
  }
}

/** start begins polling. */
export function start() {
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) refresh();
  });
  refresh();
  refreshSelf();
}
