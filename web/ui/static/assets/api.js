// The JSON API client: every call of the dashboard goes through request(),
// which adds the bearer token, turns failures into ApiErrors that say what
// failed, and asks the operator for a token when the API answers 401.

import {BASE} from './base.js';

const TOKEN_KEY = 'orderly.token';
const TIMEOUT_MS = 15000;

/** ApiError is a failed call: status 0 for a network failure. */
export class ApiError extends Error {
  constructor(status, message, field) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.field = field || '';
  }
}

/** token returns the stored bearer token, '' when none. */
export function token() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

/** setToken stores the token for this tab's session ('' forgets it). */
export function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token lives as long as the page */ }
  memoryToken = t;
}

let memoryToken = '';
const currentToken = () => token() || memoryToken;

// askToken is installed by the app: it shows the token prompt and resolves
// with the token typed. One prompt serves every call that met a 401.
let askToken = null;
let pendingAsk = null;

/** onAuthRequired installs the prompt: fn(rejected: boolean) => Promise<string>. */
export function onAuthRequired(fn) {
  askToken = fn;
}

function promptToken(rejected) {
  if (!pendingAsk) {
    pendingAsk = askToken(rejected).finally(() => { pendingAsk = null; });
  }
  return pendingAsk;
}

/**
 * seg escapes one path segment. encodeURIComponent escapes '/', '%' and
 * unicode but leaves '.', and the API (like every HTTP router) treats the
 * segments "." and ".." as path steps, so those are sent as %2E and %2E%2E.
 */
export function seg(s) {
  s = String(s);
  if (s === '.' || s === '..') return s.replaceAll('.', '%2E');
  return encodeURIComponent(s);
}

/** isDotId reports whether id is "." or "..", which a browser cannot send as a path segment. */
export const isDotId = (id) => id === '.' || id === '..';

/** path joins escaped segments into an API path: path('queues', q, 'jobs'). */
export const path = (...segs) => BASE + '/api/v1/' + segs.map(seg).join('/');

// parseJSON parses an answer keeping payload numbers exact: a number whose
// text a double cannot reproduce (a 64-bit id, 1.0) stays as written, so
// the pretty-printed payload shows the bytes the producer sent.
function parseJSON(text) {
  if (typeof JSON.rawJSON !== 'function') return JSON.parse(text);
  return JSON.parse(text, (key, value, ctx) => {
    if (typeof value === 'number' && ctx && typeof ctx.source === 'string' && String(value) !== ctx.source) {
      return JSON.rawJSON(ctx.source);
    }
    return value;
  });
}

const STATUS_TEXT = {
  400: 'Bad request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not found', 405: 'Method not allowed',
  413: 'Too large', 415: 'Unsupported media type', 500: 'Internal server error', 502: 'Bad gateway',
  503: 'Service unavailable', 504: 'Gateway timeout',
};

/**
 * request calls the API and returns the decoded answer. It throws an
 * ApiError: status 0 when the node did not answer, else the HTTP status
 * with the API's message ("503 Service unavailable: redis: ...").
 */
export async function request(method, url, body, {signal} = {}) {
  for (;;) {
    const headers = {Accept: 'application/json'};
    const t = currentToken();
    if (t) headers.Authorization = 'Bearer ' + t;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const timeout = AbortSignal.timeout(TIMEOUT_MS);
    let res;
    try {
      res = await fetch(url, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        cache: 'no-store', credentials: 'omit',
      });
    } catch (e) {
      if (signal && signal.aborted) throw e;
      const why = timeout.aborted ? `no answer within ${TIMEOUT_MS / 1000}s` : 'the node did not answer (is it running?)';
      throw new ApiError(0, `Network error: ${why}`);
    }
    const text = await res.text();
    if (res.status === 401 && askToken) {
      // Ask for a token (again, when the one sent was refused) and retry.
      setToken(await promptToken(Boolean(t)));
      continue;
    }
    let data = null;
    try {
      data = text ? parseJSON(text) : null;
    } catch {
      data = null;
    }
    if (!res.ok) {
      const label = `${res.status} ${STATUS_TEXT[res.status] || res.statusText || 'Error'}`;
      const msg = data && typeof data.error === 'string' ? `${label}: ${data.error}` : label;
      throw new ApiError(res.status, msg, data && data.field);
    }
    if (data === null) throw new ApiError(res.status, `Unexpected answer from ${url}: not JSON`);
    return data;
  }
}

const get = (url, opts) => request('GET', url, undefined, opts);
const post = (url, body, opts) => request('POST', url, body, opts);

/** query renders listing parameters, leaving out empty ones. */
function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '' && v !== false) q.set(k, v === true ? 'true' : String(v));
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

/** The API's endpoints (see package web). */
export const api = {
  queues: (opts) => get(path('queues'), opts),
  queue: (q, opts) => get(path('queues', q), opts),
  jobs: (q, params, opts) => get(path('queues', q, 'jobs') + query(params), opts),
  job: (q, id, opts) => get(path('queues', q, 'jobs', id), opts),
  deleteJob: (q, id) => request('DELETE', path('queues', q, 'jobs', id)),
  jobAction: (q, id, action) => post(path('queues', q, 'jobs', id, 'actions', action)),
  cancelJob: (q, id, mode) => post(path('queues', q, 'jobs', id, 'actions', 'cancel'), {mode}),
  nodeQuiet: (quiet) => post(path('node', quiet ? 'quiet' : 'resume')),
  processing: (q, opts) => get(path('queues', q, 'processing'), opts),
  action: (q, action) => post(path('queues', q, 'actions', action)),
  pause: (q) => post(path('queues', q, 'pause')),
  resume: (q) => post(path('queues', q, 'resume')),
  morgue: (q, params, opts) => get(path('queues', q, 'morgue') + query(params), opts),
  finished: (q, params, opts) => get(path('queues', q, 'finished') + query(params), opts),
  requeue: (q, sel) => post(path('queues', q, 'morgue', 'requeue'), sel),
  deleteDead: (q, sel) => post(path('queues', q, 'morgue', 'delete'), sel),
  cluster: (opts) => get(path('cluster'), opts),
  periodic: (opts) => get(path('periodic'), opts),
  access: (opts) => get(path('access'), opts),
  history: (minutes, opts) => get(path('history') + query({minutes}), opts),
  queueHistory: (q, minutes, opts) => get(path('queues', q, 'history') + query({minutes}), opts),
};
