// Formatting of numbers, durations, times and payloads. Output is the same
// whatever the browser's locale, so that operators on one team read the
// same thing (and tests can assert it).

const intFmt = new Intl.NumberFormat('en-US', {maximumFractionDigits: 0});
const decFmt = new Intl.NumberFormat('en-US', {maximumFractionDigits: 2});

/** num formats a count with thousands separators: 12,345. */
export function num(n) {
  return Number.isInteger(n) ? intFmt.format(n) : decFmt.format(n);
}

/** compact abbreviates counts of 10,000 and more to three significant digits: 12.3K, 4.56M. */
export function compact(n) {
  const a = Math.abs(n);
  if (a < 10_000) return num(n);
  for (const [div, suffix] of [[1e12, 'T'], [1e9, 'B'], [1e6, 'M'], [1e3, 'K']]) {
    if (a >= div) return Number((n / div).toPrecision(3)) + suffix;
  }
  return num(n);
}

/** rate formats a per-second rate: 0, 0.4, 12, 1.2K. */
export function rate(r) {
  if (r === 0) return '0';
  if (r < 10) return String(Number(r.toFixed(1)));
  return compact(Math.round(r));
}

const UNITS = [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]];

/**
 * duration renders seconds as a human duration with at most two units:
 * 0s, 350ms, 5.5s, 3m 12s, 2h 5m, 3d 4h.
 */
export function duration(sec) {
  if (!Number.isFinite(sec)) return '—';
  const neg = sec < 0;
  let s = Math.abs(sec);
  let out;
  if (s === 0) out = '0s';
  else if (s < 1) out = Math.round(s * 1000) + 'ms';
  else if (s < 10) out = Number(s.toFixed(1)) + 's';
  else {
    s = Math.round(s);
    const parts = [];
    for (const [u, n] of UNITS) {
      if (s >= n || (parts.length && parts.length < 2)) {
        const v = Math.floor(s / n);
        s -= v * n;
        if (parts.length || v) parts.push(v + u);
      }
      if (parts.length === 2) break;
    }
    // Drop a trailing zero unit: "3m 0s" reads better as "3m".
    if (parts.length === 2 && parts[1].startsWith('0')) parts.pop();
    out = parts.join(' ');
  }
  return neg ? '-' + out : out;
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

/** localTime renders unix seconds as local "YYYY-MM-DD HH:MM:SS". */
export function localTime(unix) {
  if (unix === null || unix === undefined || !Number.isFinite(unix)) return '—';
  const d = new Date(unix * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** clock renders unix seconds as local "HH:MM:SS" (or "HH:MM" without seconds). */
export function clock(unix, seconds = true) {
  const d = new Date(unix * 1000);
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return seconds ? `${hm}:${pad(d.getSeconds())}` : hm;
}

/** nowSec is the current time in unix seconds. */
export const nowSec = () => Date.now() / 1000;

/** relative renders unix seconds relative to now: "in 5m", "12s ago", "now". */
export function relative(unix, now = nowSec()) {
  const d = unix - now;
  if (Math.abs(d) < 1) return 'now';
  return d > 0 ? 'in ' + duration(d) : duration(-d) + ' ago';
}

/** looksLikeTime reports whether a score is plausibly unix seconds (2001 to 2286). */
export const looksLikeTime = (v) => typeof v === 'number' && v >= 1e9 && v < 1e10;

/** plural: plural(1, 'job') = "1 job", plural(3, 'job') = "3 jobs". */
export function plural(n, word, many = word + 's') {
  return `${num(n)} ${n === 1 ? word : many}`;
}

/** base64Bytes is the number of bytes a standard base64 string encodes. */
export function base64Bytes(b64) {
  const pad = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return Math.floor(b64.length * 3 / 4) - pad;
}

/**
 * payloadText describes one API payload ({payload} or {payload_base64}):
 * {kind: 'json', text: pretty JSON} or {kind: 'base64', text, bytes}.
 */
export function payloadText(p) {
  if (p && typeof p.payload_base64 === 'string') {
    return {kind: 'base64', text: p.payload_base64, bytes: base64Bytes(p.payload_base64)};
  }
  return {kind: 'json', text: JSON.stringify(p ? p.payload : null, null, 2)};
}

/** oneLine compacts a payload for a one-line preview. */
export function oneLine(p) {
  const t = payloadText(p);
  if (t.kind === 'base64') return `base64 ${t.text}`;
  return JSON.stringify(p.payload);
}
