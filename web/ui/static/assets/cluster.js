// The cluster (/cluster): members as the answering node sees them, and the
// shard map, who holds the lease of each shard of each queue. Refreshed
// live, so nodes joining, draining and dying show up within seconds.

import {BASE} from './base.js';
import {h, mount} from './dom.js';
import {api} from './api.js';
import {localTime, looksLikeTime, num, plural} from './format.js';
import {setSelf} from './live.js';
import {
  button, clearBanner, confirmDialog, emptyState, every, loading, queueHref, reportError, toast,
} from './components.js';

const STATES = ['alive', 'draining', 'dead', 'foreign'];
const PALETTE_SIZE = 10; // owner colours o0..o9 in the stylesheet

/**
 * ownerColours gives each node a stable colour: members by name first,
 * then owners that are not members (a lease left by a node that is gone).
 */
export function ownerColours(members, shards) {
  const names = [...new Set(members.map((m) => m.name))].sort();
  for (const s of shards) if (s.owner && !names.includes(s.owner)) names.push(s.owner);
  return new Map(names.map((n, i) => [n, i % PALETTE_SIZE]));
}

// A shard's cell is 52 px wide: it shows the last EPOCH_DIGITS digits of
// its lease epoch, which is the Redis time in milliseconds when the lease
// was taken (at least the previous epoch + 1), 13 digits today. Those
// digits change whenever the lease changes hands; the tooltip has it all.
const EPOCH_DIGITS = 4;
const EPOCH_EXAMPLE = 1712345678901;

/** epochShort is the cell's form of an epoch: …8901 for 1712345678901, small epochs whole. */
export function epochShort(epoch) {
  const s = String(epoch);
  return s.length > EPOCH_DIGITS ? '…' + s.slice(-EPOCH_DIGITS) : s;
}

// epochTitle is the tooltip's line of an epoch: the whole number and, when
// it reads as a time in milliseconds (2001 to 2286), that time.
function epochTitle(epoch) {
  const sec = epoch / 1000;
  return `lease epoch: ${epoch}` + (looksLikeTime(sec) ? ` (taken ${localTime(sec)})` : '');
}

// An address is shown as a link to that node's dashboard only when it looks
// like host:port: the value comes from gossip and is not trusted.
const ADDR = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/;

function addr(a) {
  if (!a) return h('span', {class: 'muted'}, '—');
  if (!ADDR.test(a)) return h('span', {class: 'mono'}, a);
  return h('a', {class: 'mono', href: `http://${a}${BASE}/`, target: '_blank', rel: 'noopener noreferrer',
    title: 'Open this node\'s dashboard'}, a);
}

export function render(root, {signal}) {
  document.title = 'Cluster · Orderly';
  const summary = h('section', {class: 'cards small'});
  const members = h('div', {class: 'panel-body flush'}, loading('Loading members…'));
  const map = h('div', {class: 'shardmaps'});
  const memberCount = h('span', {class: 'muted'});
  const nodeCtl = h('div', {class: 'node-ctl'});
  mount(root,
    h('div', {class: 'page-head'}, h('div', {class: 'page-title'}, h('h1', null, 'Cluster'),
      h('span', {class: 'muted'}, 'Members and shard leases, live')), nodeCtl),
    summary,
    h('section', {class: 'panel'}, h('div', {class: 'panel-head'}, h('h2', null, 'Members'), memberCount), members),
    h('section', {class: 'panel'},
      h('div', {class: 'panel-head'}, h('h2', null, 'Shard map'),
        h('span', {class: 'muted'}, 'Each cell is a shard, coloured by the node that holds its lease')),
      h('div', {class: 'panel-body'}, map)));

  let last = '';
  const load = async () => {
    try {
      const c = await api.cluster({signal});
      clearBanner('cluster');
      setSelf(c.self);
      const key = JSON.stringify(c);
      if (signal.aborted || key === last) return;
      last = key;
      draw(c);
    } catch (e) {
      if (!signal.aborted) reportError('cluster', 'Could not load the cluster.', e);
    }
  };
  every(2000, load, signal);
  signal.addEventListener('abort', () => clearBanner('cluster'));

  // quietControl shows whether the node answering the dashboard is quiet,
  // with the button that quiets or resumes it (POST /api/v1/node/quiet,
  // /resume; docs/operations.md).
  function quietControl(c) {
    if (!c.self) return mount(nodeCtl);
    const quiet = Boolean(c.quiet);
    mount(nodeCtl,
      h('span', {class: ['chip', quiet ? 'state-draining' : 'state-alive'], id: 'node-state'}, quiet ? `${c.self}: quiet` : `${c.self}: serving`),
      button(quiet ? 'Resume this node' : 'Quiet this node', {icon: quiet ? 'play' : 'pause', small: true, id: 'node-quiet', write: true,
        onclick: async () => {
          if (!quiet) {
            const ok = await confirmDialog({title: `Quiet ${c.self}?`, message: [h('p', null,
              'It finishes its running batches and releases its shards to the other nodes, and serves none until resumed. It keeps answering this dashboard.')],
            confirm: 'Quiet', danger: true});
            if (!ok) return;
          }
          try {
            const r = await api.nodeQuiet(!quiet);
            toast(r.quiet ? `${r.node} is quiet` : `${r.node} resumed`);
            clearBanner('action');
          } catch (e) {
            reportError('action', quiet ? 'Resume failed.' : 'Quiet failed.', e);
          }
          last = '';
          load();
        }}));
  }

  function draw(c) {
    quietControl(c);
    const colours = ownerColours(c.members, c.shards);
    const held = new Map();
    for (const s of c.shards) if (s.owner) held.set(s.owner, (held.get(s.owner) || 0) + 1);
    const byState = Object.fromEntries(STATES.map((s) => [s, 0]));
    for (const m of c.members) byState[m.state] = (byState[m.state] || 0) + 1;
    const owned = c.shards.filter((s) => s.owner).length;
    const queues = [...new Set(c.shards.map((s) => s.queue))];
    const alive = new Set(c.members.filter((m) => m.state === 'alive' || m.state === 'draining').map((m) => m.name));
    const orphaned = c.shards.filter((s) => s.owner && !alive.has(s.owner)).length;

    const card = (label, value, hint, cls) => h('div', {class: ['card', cls]},
      h('div', {class: 'card-label'}, label), h('div', {class: 'card-value'}, value), h('div', {class: 'card-hint'}, hint));
    mount(summary,
      card('Members', num(c.members.length), STATES.filter((s) => byState[s]).map((s) => `${byState[s]} ${s}`).join(' · ') || 'none reported'),
      card('Shards held', `${num(owned)} / ${num(c.shards.length)}`, `${c.shards.length - owned} without a lease`),
      card('Queues', num(queues.length), plural(c.shards.length, 'shard')),
      card('Stale leases', num(orphaned), 'held by a node not alive', orphaned ? 'card-warn' : null));

    memberCount.textContent = plural(c.members.length, 'member');
    if (c.members.length === 0) {
      mount(members, emptyState('cluster', 'No members reported',
        'This node runs without cluster membership, or has not seen any member yet.'));
    } else {
      const rows = [...c.members].sort((a, b) => a.name.localeCompare(b.name));
      mount(members, h('div', {class: 'table-wrap'}, h('table', {class: 'data members'},
        h('thead', null, h('tr', null, ['Node', 'State', 'HTTP', 'Actor', 'Queues', 'Version'].map((t) => h('th', null, t)),
          h('th', {class: 'num'}, 'Shards held'))),
        h('tbody', null, rows.map((m) => h('tr', {dataset: {member: m.name, state: m.state}},
          h('td', null, h('div', {class: 'node'},
            h('span', {class: ['swatch', 'owner-swatch', `o${colours.get(m.name)}`]}),
            h('span', {class: 'strong', title: m.name}, m.name),
            m.name === c.self ? h('span', {class: 'chip self-chip', title: 'the node answering this dashboard'}, 'this node') : null)),
          h('td', null, h('span', {class: ['state', `state-${STATES.includes(m.state) ? m.state : 'unknown'}`]}, m.state || 'unknown')),
          h('td', null, addr(m.http)),
          h('td', null, m.actor ? h('span', {class: 'mono'}, m.actor) : h('span', {class: 'muted'}, '—')),
          h('td', null, m.queues.length
            ? h('div', {class: 'chips'}, m.queues.map((q) => h('a', {class: 'chip', href: queueHref(q)}, q)))
            : h('span', {class: 'muted'}, 'none')),
          h('td', null, m.version ? h('span', {class: 'mono'}, m.version) : h('span', {class: 'muted'}, '—')),
          h('td', {class: 'num', dataset: {col: 'held'}}, num(held.get(m.name) || 0))))))));
    }

    if (queues.length === 0) {
      mount(map, emptyState('overview', 'No shards', 'Queues appear here once registered.'));
      return;
    }
    const legend = h('div', {class: 'legend owners'}, [...colours].map(([name, i]) =>
      h('span', {class: 'legend-item', dataset: {owner: name}},
        h('span', {class: ['swatch', `o${i}`]}), name, alive.has(name) ? null : h('span', {class: 'muted'}, ' (not alive)'))),
    h('span', {class: 'legend-item'}, h('span', {class: 'swatch unowned'}), 'no lease'),
    h('span', {class: 'legend-item muted', id: 'epoch-legend'},
      `${epochShort(EPOCH_EXAMPLE)}: the last ${EPOCH_DIGITS} digits of the lease epoch (Redis time in ms when the lease was taken), `,
      'which changes each time the shard changes owner; hover a shard for the whole epoch'));
    mount(map, legend, queues.map((q) => {
      const shards = c.shards.filter((s) => s.queue === q);
      const owners = new Set(shards.map((s) => s.owner).filter(Boolean));
      return h('div', {class: 'shardmap', dataset: {queue: q}},
        h('div', {class: 'shardmap-head'}, h('a', {class: 'strong', href: queueHref(q)}, q),
          h('span', {class: 'muted'}, `${plural(shards.length, 'shard')} · ${plural(owners.size, 'owner')}`)),
        h('div', {class: 'shard-grid'}, shards.map((s) => {
          const stale = s.owner && !alive.has(s.owner);
          return h('div', {
            class: ['shard', s.owner ? `o${colours.get(s.owner)}` : 'unowned', stale && 'stale'],
            dataset: {queue: q, shard: s.shard, owner: s.owner},
            title: `${q} shard ${s.shard}\nowner: ${s.owner || 'none'}${stale ? ' (not alive)' : ''}\n${epochTitle(s.epoch)}`,
          }, h('span', {class: 'shard-no'}, String(s.shard)), h('span', {class: 'shard-epoch'}, epochShort(s.epoch)));
        })));
    }));
  }
}
