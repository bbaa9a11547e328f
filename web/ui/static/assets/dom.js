// A tiny render helper. Everything the dashboard shows is built with h()
// and svg(): strings become text nodes, never HTML, so ids, errors and
// payloads (hostile input) cannot inject markup. Nothing here uses
// innerHTML.

const SVG_NS = 'http://www.w3.org/2000/svg';

// Properties set as DOM properties rather than attributes.
const PROPS = new Set(['value', 'checked', 'disabled', 'indeterminate', 'selected', 'open', 'hidden', 'tabIndex']);

/**
 * h builds an element: h('a', {class: 'x', href: '/y', onclick: fn}, 'text', child).
 * Props: class, dataset {k: v}, style {prop: v} (set through CSSOM, which
 * the Content-Security-Policy allows), on<event> handlers, the PROPS above
 * as properties, anything else as an attribute (null/false omit it).
 * Children: strings and numbers become text nodes; null, undefined and
 * false are skipped; arrays are flattened.
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  append(el, children);
  return el;
}

/** svg builds an SVG element; props are attributes (and on<event> handlers). */
export function svg(tag, props, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setProps(el, props);
  append(el, children);
  return el;
}

function setProps(el, props) {
  if (!props) return;
  for (const [k, v] of Object.entries(props)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') {
      el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    } else if (k === 'dataset') {
      for (const [dk, dv] of Object.entries(v)) if (dv !== undefined && dv !== null) el.dataset[dk] = String(dv);
    } else if (k === 'style') {
      for (const [sk, sv] of Object.entries(v)) el.style.setProperty(sk, sv);
    } else if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (PROPS.has(k)) {
      el[k] = v;
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** mount replaces el's children. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// Icons: 16x16 stroke paths, drawn for this app.
const ICONS = {
  overview: 'M2.5 2.5h4.5v4.5h-4.5zM9 2.5h4.5v4.5h-4.5zM2.5 9h4.5v4.5h-4.5zM9 9h4.5v4.5h-4.5z',
  cluster: 'M8 2.5a1.75 1.75 0 1 0 0 .01M3.25 11.5a1.75 1.75 0 1 0 0 .01M12.75 11.5a1.75 1.75 0 1 0 0 .01M7 5.5l-2.6 4.6M9 5.5l2.6 4.6M5 13.25h6',
  queue: 'M2.5 4h11M2.5 8h8M2.5 12h5',
  refresh: 'M13 8a5 5 0 1 1-1.6-3.7M13 2.5v2.8h-2.8',
  play: 'M5 3.2v9.6l7.5-4.8z',
  pause: 'M4.5 3h2.5v10H4.5zM9 3h2.5v10H9z',
  trash: 'M3 4.5h10M6.5 4.5V3h3v1.5M4.5 4.5l.6 8.5h5.8l.6-8.5',
  skull: 'M8 2.5c-3 0-4.75 2-4.75 4.5 0 1.5.75 2.5 1.75 3v2.5h6V10c1-.5 1.75-1.5 1.75-3 0-2.5-1.75-4.5-4.75-4.5zM6 7.5h.01M10 7.5h.01',
  requeue: 'M3 6.5h8.5a2.5 2.5 0 0 1 0 5H8M5.5 4L3 6.5 5.5 9',
  server: 'M3 3h10v4H3zM3 9h10v4H3zM5.5 5h.01M5.5 11h.01',
  lock: 'M3.5 7.5h9v6h-9zM5.5 7.5V5a2.5 2.5 0 0 1 5 0v2.5M8 10v1.5',
  search: 'M7 2.5a4.5 4.5 0 1 0 0 9a4.5 4.5 0 1 0 0-9M10.3 10.3l3.2 3.2',
  logout: 'M6 2.5H3v11h3M10.5 5l3 3-3 3M13.5 8H6',
  alert: 'M8 2l6.5 11.5h-13zM8 6.5v3M8 11.5h.01',
  arrowRight: 'M3 8h10M9.5 4.5L13 8l-3.5 3.5',
  arrowLeft: 'M13 8H3M6.5 4.5L3 8l3.5 3.5',
  close: 'M4 4l8 8M12 4l-8 8',
  inbox: 'M2.5 9l1.5-5.5h8L13.5 9v4h-11zM2.5 9h3l1 1.5h3l1-1.5h3',
};

/** icon returns the named 16x16 icon as an inline SVG. */
export function icon(name, cls) {
  return svg('svg', {class: cls ? 'icon ' + cls : 'icon', viewBox: '0 0 16 16', width: 16, height: 16, 'aria-hidden': 'true'},
    svg('path', {d: ICONS[name] || ''}));
}
