// The finished ids of a queue with retain_finished (/queues/{q}/finished,
// docs/contract.md §3.14): by finished_at, the latest first (or the
// earliest first), or by id from a given id on, with their attempts, last
// error and result.

import {h, mount} from './dom.js';
import {api} from './api.js';
import {plural} from './format.js';
import {navigate} from './router.js';
import {
  button, clearBanner, emptyState, errorBlock, jobHref, loading, queueHeader, queueHref, reportError, timeText,
} from './components.js';

const PAGE_SIZE = 50;

/** resultText is a finished id's result as text: its JSON, or base64. */
export function resultText(f) {
  if (f.result !== undefined) return JSON.stringify(f.result, null, 2);
  if (f.result_base64 !== undefined) return 'base64 ' + f.result_base64;
  return null;
}

/** finishedCard shows one finished id. */
export function finishedCard(q, f) {
  const res = resultText(f);
  return h('article', {class: 'job finished', dataset: {id: f.id}},
    h('header', {class: 'job-head'},
      h('a', {class: 'job-id', href: jobHref(q, f.id), title: f.id}, f.id === '' ? '(empty)' : f.id),
      h('span', {class: 'badge fresh'}, 'finished'),
      h('span', {class: 'spacer'}),
      h('span', {class: 'job-meta'}, h('span', {class: 'meta-label'}, 'finished_at'), timeText(f.finished_at)),
      h('span', {class: 'job-meta muted', dataset: {attempts: f.attempts}}, plural(f.attempts, 'attempt'))),
    f.error ? [h('div', {class: 'meta-label'}, 'Last failed attempt'), errorBlock(f.error)] : null,
    f.errors && f.errors.length ? h('ol', {class: 'finished-attempts'}, f.errors.map((a) =>
      h('li', null, timeText(a.at), ' ', h('code', null, a.error)))) : null,
    res !== null ? h('pre', {class: 'code finished-result', title: 'result'}, res)
      : h('div', {class: 'muted finished-noresult'}, 'No result set'));
}

/** render is the Finished tab. */
export function render(root, {params: [q], query, signal}) {
  document.title = `${q} · finished · Orderly`;
  const byID = query.order === 'id';
  const asc = query.dir === 'asc';
  const from = query.from || '';
  const cursor = query.cursor || '';
  // The query of this view without its cursor: the first page, and the
  // base of the next page's link.
  const base = byID ? {order: 'id', ...(from ? {from} : {})} : (asc ? {dir: 'asc'} : {});
  const list = h('div', {class: 'list'}, loading('Loading the finished ids…'));
  const load = async () => {
    try {
      const params = byID ? {order: 'id', min: from, cursor, limit: PAGE_SIZE}
        : {rev: asc ? '' : 'true', cursor, limit: PAGE_SIZE};
      const page = await api.finished(q, params, {signal});
      clearBanner('finished');
      if (signal.aborted) return;
      if (page.jobs.length === 0) {
        mount(list, emptyState('inbox', cursor ? 'No more finished ids' : 'No finished ids kept',
          'A queue with retain_finished keeps each id it acknowledges for that long: when it finished, its attempts and its result.'));
        return;
      }
      mount(list, page.jobs.map((f) => finishedCard(q, f)),
        h('div', {class: 'pager'},
          cursor ? h('a', {class: 'btn', href: queueHref(q, 'finished', base)}, 'First page') : null,
          h('span', {class: 'muted'}, plural(page.jobs.length, 'id')),
          page.next ? h('a', {class: 'btn', id: 'next-page', href: queueHref(q, 'finished', {...base, cursor: page.next})}, 'Next page') : null));
    } catch (e) {
      if (signal.aborted) return;
      reportError('finished', `Could not list the finished ids of ${q}.`, e);
      mount(list, emptyState('alert', 'The listing failed', e.message));
    }
  };
  const order = h('div', {class: 'filterbar'},
    h('a', {class: ['btn', 'small', !byID && !asc && 'active'], href: queueHref(q, 'finished'), id: 'finished-latest'}, 'Latest first'),
    h('a', {class: ['btn', 'small', !byID && asc && 'active'], href: queueHref(q, 'finished', {dir: 'asc'}), id: 'finished-earliest'}, 'Earliest first'),
    h('a', {class: ['btn', 'small', byID && 'active'], href: queueHref(q, 'finished', {order: 'id'}), id: 'finished-by-id'}, 'By id'),
    fromForm(q, from),
    button('Refresh', {icon: 'refresh', small: true, onclick: load}));
  mount(root, queueHeader(q, 'finished', signal), order, list);
  signal.addEventListener('abort', () => clearBanner('finished'));
  load();
}

/**
 * fromForm searches the finished ids by id: submitted, it lists them by id
 * from the id typed on (a prefix lists the ids that start with it first).
 */
function fromForm(q, from) {
  const input = h('input', {class: 'input', type: 'search', id: 'finished-from', placeholder: 'From id…', value: from, 'aria-label': 'List finished ids from this id on'});
  return h('form', {class: 'filters search', role: 'search', onsubmit: (e) => {
    e.preventDefault();
    const params = {order: 'id'};
    if (input.value !== '') params.from = input.value;
    navigate(queueHref(q, 'finished', params));
  }}, input);
}
