// A small SVG time-series chart: a few lines over a time window, a y axis
// with round ticks, clock labels, and a hover readout. Drawn by hand rather
// than with a library: the dashboard plots two charts of a few hundred
// points, which needs ~150 lines, no vendored code, and the colours come
// from the stylesheet (classes s0, s1, ...), so the dark theme just works.

import {h, svg, mount} from './dom.js';
import {clock} from './format.js';

const PAD = {left: 52, right: 14, top: 12, bottom: 26};
const TIME_STEPS = [5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600];

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
function niceStep(raw) {
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/**
 * lineChart returns {el, update}. update({series: [{label, points: [{t, v}]}],
 * t0, t1}) redraws; format renders a value (axis and readout).
 */
export function lineChart({height = 180, format = String, label = 'chart'} = {}) {
  const el = h('div', {class: 'chart', role: 'img', 'aria-label': label});
  const tip = h('div', {class: 'chart-tip', hidden: true});
  let data = null;
  let mouseX = null; // the pointer's x in the chart while it hovers, kept across redraws

  const draw = () => {
    if (!data) return;
    const width = Math.max(el.clientWidth || 0, 240);
    const {series, t0, t1} = data;
    const iw = width - PAD.left - PAD.right;
    const ih = height - PAD.top - PAD.bottom;
    let max = 0;
    for (const s of series) for (const p of s.points) max = Math.max(max, p.v);
    const step = niceStep(max > 0 ? max / 3 : 1 / 3);
    const top = Math.max(step * Math.ceil(max / step), step);
    const span = Math.max(t1 - t0, 1);
    const x = (t) => PAD.left + ((t - t0) / span) * iw;
    const y = (v) => PAD.top + ih - (v / top) * ih;

    const grid = [];
    for (let k = 0; k * step <= top + step / 2; k++) {
      const v = k * step;
      grid.push(svg('line', {class: 'grid', x1: PAD.left, x2: width - PAD.right, y1: y(v), y2: y(v)}));
      grid.push(svg('text', {class: 'axis', x: PAD.left - 8, y: y(v) + 4, 'text-anchor': 'end'}, format(v)));
    }
    // Time labels on round seconds, at most one per ~90 px.
    const tstep = TIME_STEPS.find((s) => (span / s) * 90 <= iw) || TIME_STEPS.at(-1);
    for (let t = Math.ceil(t0 / tstep) * tstep; t <= t1; t += tstep) {
      if (x(t) < PAD.left + 24 || x(t) > width - PAD.right - 24) continue;
      grid.push(svg('line', {class: 'tick', x1: x(t), x2: x(t), y1: PAD.top + ih, y2: PAD.top + ih + 4}));
      grid.push(svg('text', {class: 'axis', x: x(t), y: height - 8, 'text-anchor': 'middle'}, clock(t, tstep < 60)));
    }
    const lines = series.map((s, i) => {
      if (s.points.length === 0) return null;
      const d = s.points.map((p, j) => `${j ? 'L' : 'M'}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join('');
      const first = s.points[0], last = s.points[s.points.length - 1];
      const area = i === 0 && s.points.length > 1
        ? svg('path', {class: `area s${i}`, d: `${d}L${x(last.t).toFixed(1)},${y(0)}L${x(first.t).toFixed(1)},${y(0)}Z`})
        : null;
      return [area, svg('path', {class: `line s${i}`, d}),
        s.points.length === 1 ? svg('circle', {class: `dot s${i}`, cx: x(first.t), cy: y(first.v), r: 3}) : null];
    });
    const cursor = svg('g', {class: 'cursor', visibility: 'hidden'});
    const overlay = svg('rect', {class: 'overlay', x: PAD.left, y: PAD.top, width: iw, height: ih});
    const view = {x, y, series, cursor};
    overlay.addEventListener('mousemove', (ev) => {
      mouseX = ev.clientX - el.getBoundingClientRect().left;
      hover(mouseX, view);
    });
    overlay.addEventListener('mouseleave', () => {
      mouseX = null;
      cursor.setAttribute('visibility', 'hidden');
      tip.hidden = true;
    });
    mount(el, svg('svg', {width, height, viewBox: `0 0 ${width} ${height}`}, grid, lines, cursor, overlay), tip);
    if (mouseX !== null) hover(mouseX, view);
  };

  // hover shows the values of the sample nearest to mx, the pointer's x.
  const hover = (mx, {x, y, series, cursor}) => {
    const ref = series.find((s) => s.points.length);
    if (!ref) return;
    const box = el.getBoundingClientRect();
    let best = ref.points[0];
    for (const p of ref.points) if (Math.abs(x(p.t) - mx) < Math.abs(x(best.t) - mx)) best = p;
    const cx = x(best.t);
    const rows = series.map((s, i) => {
      const p = s.points.find((q) => q.t === best.t);
      return p ? {i, label: s.label, v: p.v} : null;
    }).filter(Boolean);
    mount(cursor,
      svg('line', {class: 'cursor-line', x1: cx, x2: cx, y1: PAD.top, y2: height - PAD.bottom}),
      rows.map((r) => svg('circle', {class: `dot s${r.i}`, cx, cy: y(r.v), r: 3.5})));
    cursor.setAttribute('visibility', 'visible');
    mount(tip, h('div', {class: 'chart-tip-time'}, clock(best.t)),
      rows.map((r) => h('div', {class: 'chart-tip-row'},
        h('span', {class: `swatch s${r.i}`}), h('span', null, r.label), h('strong', null, format(r.v)))));
    tip.hidden = false;
    // Right of the cursor, or left of it near the right edge.
    const w = tip.offsetWidth;
    tip.style.left = (cx + 12 + w > box.width ? Math.max(0, cx - w - 12) : cx + 12) + 'px';
    tip.style.top = PAD.top + 'px';
  };

  const ro = new ResizeObserver(() => draw());
  ro.observe(el);
  return {
    el,
    update(d) {
      data = d;
      draw();
    },
    destroy() {
      ro.disconnect();
    },
  };
}
