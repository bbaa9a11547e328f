// The path the dashboard is served under: '' at the root of the node, or
// the node's http_base_path ('/orderly'), read from where this file comes
// from (BASE/assets/base.js), so that the app needs no configuration. The
// app's links and API calls are paths under it; its routes are the paths
// below it.

/** BASE is the path the dashboard is served under, without a trailing slash ('' at the root). */
export const BASE = new URL('..', import.meta.url).pathname.replace(/\/$/, '');

/** href turns a path of the app ('/queues/x') into the URL path the browser sees. */
export const href = (p) => BASE + p;

/** appPath is the path of the app of a URL path: without BASE ('/' for BASE itself), or null outside it. */
export function appPath(pathname) {
  if (!BASE) return pathname;
  if (pathname === BASE) return '/';
  return pathname.startsWith(BASE + '/') ? pathname.slice(BASE.length) : null;
}
