// The finished ids of a queue with retain_finished (/queues/{q}/finished,
// docs/contract.md §3.14): by finished_at, the latest first, with their
// attempts, last error and result.

import {h, mount} from './dom.js';
import {api} from './api.js';
import {plural} from './format.js';
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
  const asc = query.dir === 'asc';
  const cursor = query.cursor || '';
  const list = h('div', {class: 'list'}, loading('Loading the finished ids…'));
  const load = async () => {
    try {
      const page = await api.finished(q, {rev: asc ? '' : 'true', cursor, limit: PAGE_SIZE}, {signal});
      clearBanner('finished');
      if (signal.aborted) return;
      if (page.jobs.length === 0) {
        mount(list, emptyState('inbox', cursor ? 'No more finished ids' : 'No finished ids kept',
          'A queue with retain_finished keeps each id it acknowledges for that long: when it finished, its attempts and its result.'));
        return;
      }
      const params = {cursor: page.next};
      if (asc) params.dir = 'asc';
      mount(list, page.jobs.map((f) => finishedCard(q, f)),
        h('div', {class: 'pager'},
          cursor ? h('a', {class: 'btn', href: queueHref(q, 'finished', asc ? {dir: 'asc'} : null)}, 'First page') : null,
          h('span', {class: 'muted'}, plural(page.jobs.length, 'id')),
          page.next ? h('a', {class: 'btn', id: 'next-page', href: queueHref(q, 'finished', params)}, 'Next page') : null));
    } catch (e) {
      if (signal.aborted) return;
      reportError('finished', `Could not list the finished ids of ${q}.`, e);
      mount(list, emptyState('alert', 'The listing failed', e.message));
    }
  };
  const order = h('div', {class: 'filterbar'},
    h('a', {class: ['btn', 'small', !asc && 'active'], href: queueHref(q, 'finished'), id: 'finished-latest'}, 'Latest first'),
    h('a', {class: ['btn', 'small', asc && 'active'], href: queueHref(q, 'finished', {dir: 'asc'}), id: 'finished-earliest'}, 'Earliest first'),
    button('Refresh', {icon: 'refresh', small: true, onclick: load}));
  mount(root, queueHeader(q, 'finished', signal), order, list);
  signal.addEventListener('abort', () => clearBanner('finished'));
  load();
}
