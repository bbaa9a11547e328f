// History API routing. The server answers every path outside /api with the
// app shell, so a route is just location.pathname: deep links and reloads
// work, and ids travel as escaped path segments (see api.seg). Under a base
// path (base.js), the routes are the paths below it; links and navigate()
// take whole URL paths.

import {appPath} from './base.js';

let routes = [];
let onRoute = null;

/**
 * start installs the routes, [pattern, page] pairs whose patterns match the
 * escaped pathname and capture escaped segments, and renders the current
 * location. render(page, params, query) is called on every navigation.
 */
export function start(table, render) {
  routes = table;
  onRoute = render;
  window.addEventListener('popstate', dispatch);
  document.addEventListener('click', interceptLinks);
  dispatch();
}

/** navigate goes to a path of the app without reloading it. */
export function navigate(url, {replace = false} = {}) {
  if (url === location.pathname + location.search) replace = true;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  dispatch();
}

/** setQuery replaces the query string of the current page (no re-render). */
export function setQuery(params) {
  const s = new URLSearchParams(params).toString();
  history.replaceState(null, '', location.pathname + (s ? '?' + s : ''));
}

function dispatch() {
  const path = appPath(location.pathname);
  if (path === null) {
    onRoute(null, [location.pathname], {});
    return;
  }
  const query = Object.fromEntries(new URLSearchParams(location.search));
  for (const [re, page] of routes) {
    const m = re.exec(path);
    if (!m) continue;
    let params;
    try {
      params = m.slice(1).map(decodeURIComponent);
    } catch {
      break; // a malformed escape: not found
    }
    onRoute(page, params, query);
    return;
  }
  onRoute(null, [path], query);
}

// interceptLinks turns clicks on the app's own links into navigations,
// leaving new-tab clicks, downloads and other origins to the browser.
function interceptLinks(ev) {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  const p = appPath(url.pathname);
  if (url.origin !== location.origin || p === null || p.startsWith('/api/')) return;
  ev.preventDefault();
  navigate(url.pathname + url.search);
}
