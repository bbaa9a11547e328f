// The dashboard's entry point: the layout (sidebar, top bar, banners), the
// token prompt, the live indicator, and the routes.

import {appPath, href} from './base.js';
import {h, icon, mount} from './dom.js';
import {api, onAuthRequired, setToken, token} from './api.js';
import {compact, num, relative} from './format.js';
import {live, start as startLive, subscribe} from './live.js';
import {clearBanner, emptyState, jobHref, queueHref, reportError} from './components.js';
import * as router from './router.js';
import * as overview from './overview.js';
import * as queuePage from './queue.js';
import * as jobs from './jobs.js';
import * as morgue from './morgue.js';
import * as finished from './finished.js';
import * as cluster from './cluster.js';

// Routes match the escaped pathname; captures are decoded by the router.
const ROUTES = [
  [/^\/$/, overview.render],
  [/^\/cluster\/?$/, cluster.render],
  [/^\/queues\/([^/]+)\/?$/, jobs.renderJobs],
  [/^\/queues\/([^/]+)\/processing\/?$/, queuePage.renderProcessing],
  [/^\/queues\/([^/]+)\/job\/?$/, queuePage.renderJob],
  [/^\/queues\/([^/]+)\/morgue\/?$/, morgue.render],
  [/^\/queues\/([^/]+)\/finished\/?$/, finished.render],
];

// ---- Layout ----

const navQueues = h('div', {class: 'nav-queues'});
const selfEl = h('span', {class: 'self-name'}, '…');
const liveEl = h('span', {class: 'live', dataset: {state: 'connecting'}},
  h('span', {class: 'live-dot'}), h('span', {class: 'live-text'}, 'Connecting'));
const signOut = h('button', {type: 'button', class: 'nav-link signout', hidden: !token(), onclick: () => {
  setToken('');
  location.reload();
}}, icon('logout'), 'Forget token');
const content = h('main', {class: 'content', id: 'content'});
// The notice of a node on the embedded store: shown while it is true.
const embeddedNotice = h('div', {class: 'notice', id: 'embedded-store', role: 'note', hidden: true},
  icon('alert'), h('div', {class: 'banner-text'},
    h('strong', null, 'In-memory store.'),
    ' This node runs without Redis: its jobs are lost when it stops, and no other node can join it. ',
    'Start it with ', h('code', null, '--redis redis://host:6379/0'), ' for anything that matters.'));
const readOnlyChip = h('span', {class: 'chip read-only-chip', id: 'read-only', hidden: true,
  title: 'The token in use opens the views only: actions that change state are hidden'}, icon('lock'), 'Read-only');

// The job finder: a queue and an exact id, straight to the job's page.
const findQueue = h('select', {class: 'input find-queue', 'aria-label': 'Queue', id: 'find-queue'});
const findId = h('input', {class: 'input find-id', id: 'find-id', placeholder: 'Find a job by id', 'aria-label': 'Job id',
  spellcheck: 'false', autocomplete: 'off'});
const finder = h('form', {class: 'find', role: 'search', onsubmit: (e) => {
  e.preventDefault();
  if (!findQueue.value || findId.value.trim() === '') return;
  router.navigate(jobHref(findQueue.value, findId.value));
  findId.value = '';
  findId.blur();
}}, icon('search'), findQueue, findId);

// currentQueue is the queue of the page shown, if any.
function currentQueue() {
  const m = /^\/queues\/([^/]+)/.exec(appPath(location.pathname) || '');
  try {
    return m ? decodeURIComponent(m[1]) : '';
  } catch {
    return '';
  }
}

// drawFinder keeps the finder's queues in step with the live feed; on a
// navigation (follow) it also selects the queue of the new page.
let followQueue = true;
function drawFinder(follow = false) {
  followQueue ||= follow;
  const names = (live.queues || []).map((q) => q.name);
  if (names.join('\n') !== [...findQueue.options].map((o) => o.value).join('\n')) {
    const keep = findQueue.value;
    mount(findQueue, names.map((n) => h('option', {value: n}, n)));
    if (names.includes(keep)) findQueue.value = keep;
  }
  const cur = currentQueue();
  if (followQueue && names.includes(cur)) {
    findQueue.value = cur;
    followQueue = false;
  }
  finder.hidden = names.length === 0;
}

const layout = [
  h('aside', {class: 'sidebar'},
    h('a', {class: 'brand', href: href('/')}, h('img', {src: href('/assets/favicon.svg'), alt: '', width: 24, height: 24}), 'Orderly'),
    h('nav', {class: 'nav', 'aria-label': 'Main'},
      h('a', {class: 'nav-link', href: href('/'), dataset: {nav: 'overview'}}, icon('overview'), 'Overview'),
      h('a', {class: 'nav-link', href: href('/cluster'), dataset: {nav: 'cluster'}}, icon('cluster'), 'Cluster'),
      h('div', {class: 'nav-section'}, 'Queues'),
      navQueues),
    h('div', {class: 'sidebar-foot'}, signOut)),
  h('div', {class: 'main'},
    h('header', {class: 'topbar'},
      h('div', {class: 'topbar-left'}, finder),
      h('div', {class: 'topbar-right'},
        readOnlyChip,
        h('span', {class: 'self', title: 'The node that answers this dashboard\'s API calls'},
          icon('server'), h('span', {class: 'muted'}, 'Node'), selfEl),
        liveEl)),
    embeddedNotice,
    h('div', {class: 'banners', id: 'banners'}),
    content),
];

// drawNav lists the queues in the sidebar with their queued and dead counts;
// it rebuilds the links only when something they show changed.
let navKey = '';
function drawNav() {
  const qs = live.queues;
  if (!qs) return;
  const current = location.pathname;
  const key = current + JSON.stringify(qs.map((q) => [q.name, q.length, q.morgue_length, q.paused]));
  if (key === navKey) return;
  navKey = key;
  mount(navQueues, qs.length === 0
    ? h('div', {class: 'nav-empty'}, 'No queues yet')
    : qs.map((q) => {
      const href = queueHref(q.name);
      const active = current === href || current.startsWith(href + '/');
      return h('a', {class: ['nav-link', 'nav-queue', active && 'active'], href, title: q.name, dataset: {queue: q.name}},
        h('span', {class: 'nav-queue-name'}, q.name),
        // A paused queue starts no handler call on any node.
        q.paused ? h('span', {class: 'nav-paused', title: 'Paused: no node starts a handler call of this queue'},
          icon('pause'), h('span', {class: 'sr-only'}, 'paused')) : null,
        // The count is always the queued jobs; a dead count, when there
        // is one, is a second badge of its own colour.
        q.morgue_length > 0
          ? h('span', {class: 'nav-count dead', title: `${num(q.morgue_length)} in the morgue`}, compact(q.morgue_length))
          : null,
        h('span', {class: 'nav-count queued', title: `${num(q.length)} queued`}, compact(q.length)));
    }));
}

// drawLive updates the live indicator and the queues banner.
function drawLive() {
  selfEl.textContent = live.self || '—';
  let state, text;
  if (live.paused) [state, text] = ['paused', 'Paused'];
  else if (live.error) [state, text] = ['down', live.error.status === 0 ? 'Offline' : 'Error'];
  else if (live.queues) [state, text] = ['live', 'Live'];
  else [state, text] = ['connecting', 'Connecting'];
  liveEl.dataset.state = state;
  liveEl.lastChild.textContent = text;
  liveEl.title = live.updatedAt ? `Last update ${relative(live.updatedAt)}; refreshes every 1.5 s` : '';
  if (state === 'live') {
    // Restart the pulse animation on every refresh.
    liveEl.classList.remove('tick');
    void liveEl.offsetWidth;
    liveEl.classList.add('tick');
  }
  reportError('queues', 'Could not load queues.', live.error);
  // Numbers the last poll could not refresh are shown dimmed.
  document.body.classList.toggle('stale', Boolean(live.error));
  signOut.hidden = !token();
  embeddedNotice.hidden = !live.embedded;
}

// ---- Access ----

// The page asks the API what its credentials allow (GET /api/v1/access)
// and hides the actions it cannot perform: body.read-only hides every
// [data-write] element. Until the answer, body.access-unknown hides them
// too, so that a read-only viewer never sees an action flash enabled. The
// question is asked again whenever the token changes.
let accessFor = null; // the token the current answer is for
function checkAccess() {
  const t = token();
  if (t === accessFor) return;
  accessFor = t;
  api.access().then((a) => {
    if (accessFor !== t) return;
    document.body.classList.toggle('read-only', !a.write);
    readOnlyChip.hidden = a.write;
  }).catch(() => {
    // An older node without the endpoint, or a failure reported elsewhere:
    // show the actions; the API still refuses what the token cannot do.
    if (accessFor === t) document.body.classList.remove('read-only');
  }).finally(() => {
    if (accessFor === t) document.body.classList.remove('access-unknown');
  });
}

// ---- Token prompt ----

// askToken shows the token dialog; it resolves with what the operator typed.
function askToken(rejected) {
  return new Promise((resolve) => {
    const input = h('input', {type: 'password', id: 'token-input', class: 'input', autocomplete: 'current-password',
      placeholder: 'Bearer token', required: true, spellcheck: 'false'});
    const form = h('form', {class: 'modal-body', id: 'token-form'},
      h('div', {class: 'modal-icon'}, icon('lock')),
      h('h2', null, 'This node needs an access token'),
      h('p', {class: 'modal-text'},
        'The API answered 401. Paste the token the node was started with (',
        h('code', null, '--http-token'), ' or ', h('code', null, 'ORDERLY_HTTP_TOKEN'),
        '), or its read-only token (', h('code', null, '--http-read-token'), ') to view without acting. It is kept in this tab only and sent as a bearer token.'),
      rejected ? h('p', {class: 'form-error', role: 'alert'}, 'That token was refused. Try again.') : null,
      h('label', {class: 'field'}, h('span', null, 'Token'), input),
      h('div', {class: 'modal-actions'}, h('button', {type: 'submit', class: 'btn primary', id: 'token-submit'}, 'Sign in')));
    const dlg = h('dialog', {class: 'modal', id: 'token-dialog'}, form);
    // The dialog cannot be dismissed: without a token there is nothing to show.
    dlg.addEventListener('cancel', (e) => e.preventDefault());
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const t = input.value.trim();
      if (!t) return;
      dlg.close();
      dlg.remove();
      signOut.hidden = false;
      resolve(t);
    });
    document.body.append(dlg);
    dlg.showModal();
    input.focus();
  });
}

// ---- Pages ----

let leave = null; // aborts the current page's polls and subscriptions

function render(page, params, query) {
  if (leave) leave.abort();
  leave = new AbortController();
  clearBanner('action'); // a failed action belongs to the page it was made on
  for (const a of document.querySelectorAll('.nav > .nav-link')) {
    const nav = a.dataset.nav;
    const p = appPath(location.pathname);
    a.classList.toggle('active', (nav === 'overview' && p === '/') || (nav === 'cluster' && p !== null && p.startsWith('/cluster')));
  }
  drawNav();
  drawFinder(true);
  content.replaceChildren();
  window.scrollTo(0, 0);
  if (!page) {
    mount(content, emptyState('alert', 'Page not found',
      [`Nothing lives at ${params[0]}. `, h('a', {href: href('/')}, 'Back to the overview')]));
    document.title = 'Not found · Orderly';
    return;
  }
  try {
    page(content, {params, query, signal: leave.signal});
  } catch (e) {
    // A bug, not a failed call: say so rather than leave a blank page.
    console.error(e);
    mount(content, emptyState('alert', 'This page failed to render', String(e && e.message || e)));
  }
}

const app = document.getElementById('app');
document.body.classList.add('access-unknown');
mount(app, layout);
app.removeAttribute('aria-busy');
onAuthRequired(askToken);
subscribe(() => {
  checkAccess();
  drawNav();
  drawFinder();
  drawLive();
});
startLive();
router.start(ROUTES, render);
