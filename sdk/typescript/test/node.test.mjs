// Against a real node, started by sdk/sdk_test.go, which sets ORDERLY_URL,
// ORDERLY_TOKEN, ORDERLY_PREFIX (queues <p>-plain, <p>-state, <p>-hook signed by
// Orderly's scheme with ORDERLY_SECRET, <p>-std by Standard Webhooks with
// ORDERLY_STD_SECRET, <p>-pull served to pull workers whose token is
// ORDERLY_WORKER_TOKEN, <p>-lease a pull queue with a 3 s lease) and the
// receivers' ports ORDERLY_HOOK_PORT, ORDERLY_STD_PORT. ORDERLY_PULL_NEXT: "1"
// when the node's pull answers take "next", "0" when it refuses the field.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { once } from "node:events";
import { Answer, Client, OrderlyError, Worker, payloadBytes, receiver } from "../dist/src/index.js";

const env = process.env;
const skip = env.ORDERLY_URL ? false : "ORDERLY_URL not set: run by sdk/sdk_test.go";
const c = new Client(env.ORDERLY_URL ?? "http://127.0.0.1:9", { token: env.ORDERLY_TOKEN });
const p = env.ORDERLY_PREFIX;
const q = { plain: `${p}-plain`, state: `${p}-state`, hook: `${p}-hook`, std: `${p}-std`, pull: `${p}-pull`, lease: `${p}-lease` };

test("auth", { skip }, async () => {
  await assert.rejects(new Client(env.ORDERLY_URL, { token: "wrong" }).enqueue(q.plain, [{ id: "x" }]), (e) => e instanceof OrderlyError && e.status === 401);
});

test("enqueue, lookup, cancel", { skip }, async () => {
  const got = await c.enqueue(q.plain, [
    { id: "a", payload: { n: 1 }, score: 1, perform_in: "1h", headers: { h: "v" } },
    { id: "b", payload_base64: "AA==", perform_in: 3600 },
    { id: "c", payload: 1, perform_at: Date.now() / 1000 + 3600 },
  ]);
  assert.deepEqual(got, { enqueued: 3, duplicates: 0 });
  const dup = [{ id: "d", payload: 1, perform_in: "1h", dedup_key: "k" }];
  assert.equal((await c.enqueue(q.plain, dup)).duplicates, 0);
  assert.equal((await c.enqueue(q.plain, dup)).duplicates, 1);
  const found = await c.job(q.plain, "a");
  assert.deepEqual(found.queued.payloads[0].payload, { n: 1 });
  assert.deepEqual(found.queued.payloads[0].headers, { h: "v" });
  assert.equal(await c.job(q.plain, "nope"), null);
  assert.equal((await c.cancel(q.plain, "a", "delete")).mode, "delete");
  const after = await c.job(q.plain, "a");
  assert.ok(after === null || after.queued === null, JSON.stringify(after));
});

test("expiry and priority", { skip }, async () => {
  const at = Math.round(Date.now() / 1000 + 3600);
  await c.enqueue(q.plain, [
    { id: "e", payload: 1, perform_in: "1h", expires_at: at, priority: 3 },
    { id: "f", payload: 2, perform_in: "1h", expires_in: "2h" },
  ]);
  const e = (await c.job(q.plain, "e")).queued;
  assert.equal(e.priority, 3);
  assert.equal(e.payloads[0].expires_at, at);
  const f = (await c.job(q.plain, "f")).queued;
  assert.equal(f.priority, undefined);
  assert.ok(f.payloads[0].expires_at > at, JSON.stringify(f));
});

test("state compare-and-set and the feed", { skip }, async () => {
  assert.deepEqual(await c.getState(q.state, "acc"), { state: null, version: 0 });
  const v = await c.setState(q.state, "acc", { n: 1 }, 0);
  await assert.rejects(c.setState(q.state, "acc", { n: 2 }, 0), (e) => e instanceof OrderlyError && e.conflict);
  const v2 = await c.setState(q.state, "acc", { n: 2 }, v);
  const st = await c.getState(q.state, "acc");
  assert.deepEqual([st.state, st.version], [{ n: 2 }, v2]);
  const page = await c.feed(q.state, "0");
  assert.deepEqual(page.entries.map((e) => [e.id, e.version, e.state]), [["acc", v, { n: 1 }], ["acc", v2, { n: 2 }]]);
  await c.setState(q.state, "acc", null, v2);
  const more = await c.feed(q.state, page.next, { waitSeconds: 5 });
  assert.deepEqual(more.entries.map((e) => [e.id, e.deleted]), [["acc", true]]);
});

async function deliveries(t, queue, port, secret) {
  const seen = [];
  const server = http.createServer(receiver((d) => {
    seen.push(d);
    const a = new Answer();
    for (const j of d.jobs) a.setState(j.id, { got: JSON.parse(new TextDecoder().decode(payloadBytes(j.payloads.at(-1)))), delivery: d.name });
    return a;
  }, secret));
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  t.after(() => { server.closeAllConnections(); server.close(); });
  // A forged request is refused.
  const forged = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: '{"queue":"q","shard":0,"jobs":[]}', headers: { "Orderly-Signature": "t=1,v1=" + "0".repeat(64) } });
  assert.equal(forged.status, 401);
  await c.enqueue(queue, [{ id: "w1", payload: { k: "v" } }]);
  let st;
  for (const limit = Date.now() + 30_000; Date.now() < limit; await new Promise((r) => setTimeout(r, 50))) {
    st = await c.getState(queue, "w1");
    if (st.state !== null) break;
  }
  assert.deepEqual(st.state.got, { k: "v" }, "the receiver's answer committed the state");
  assert.ok(st.state.delivery.startsWith(queue + "/"), JSON.stringify(st.state));
  assert.equal(seen[0].queue, queue);
  assert.deepEqual(seen[0].jobs.map((j) => j.id), ["w1"]);
}

test("signed deliveries, Orderly's scheme", { skip }, (t) => deliveries(t, q.hook, Number(env.ORDERLY_HOOK_PORT), env.ORDERLY_SECRET));
test("signed deliveries, Standard Webhooks", { skip }, (t) => deliveries(t, q.std, Number(env.ORDERLY_STD_PORT), env.ORDERLY_STD_SECRET));

// Four ids with five payloads each, queued before any worker runs; three pull
// loops with the queue's worker token drain them. p1 fails once: its payloads
// come again. Per id: never two windows at once, payloads in send order,
// every payload acknowledged.
test("pull worker against the node", { skip }, async () => {
  const ids = ["p0", "p1", "p2", "p3"];
  await c.enqueue(q.pull, ids.flatMap((id) => [0, 1, 2, 3, 4].map((n) => ({ id, payload: { n } }))));
  const held = new Set();
  const overlaps = [];
  const done = {};
  const calls = [];
  let acked = 0;
  let allDone;
  const finished = new Promise((r) => (allDone = r));
  const wc = new Client(env.ORDERLY_URL, { token: env.ORDERLY_WORKER_TOKEN });
  const w = new Worker(wc, q.pull, async (win) => {
    const a = new Answer();
    for (const j of win.jobs) {
      if (held.has(j.id)) overlaps.push(j.id);
      held.add(j.id);
    }
    await new Promise((r) => setImmediate(r)); // let other loops run meanwhile
    for (const j of win.jobs) {
      const ns = j.payloads.map((pl) => JSON.parse(new TextDecoder().decode(payloadBytes(pl))).n);
      calls.push([j.id, ns]);
      if (j.id === "p1" && j.retry_count < 0) a.fail(j.id, "first try fails");
      else {
        (done[j.id] ??= []).push(...ns);
        acked += ns.length;
      }
      held.delete(j.id);
    }
    if (acked >= 20) allDone();
    return a;
  }, { concurrency: 3, maxIds: 2, waitSeconds: 1 });
  w.start();
  let timer;
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${acked} of 20 payloads acknowledged in 30 s`)), 30_000)));
  try {
    await Promise.race([finished, late]);
  } finally {
    clearTimeout(timer);
    assert.equal(await w.stop(15_000), true, "the worker stopped");
  }
  assert.deepEqual(overlaps, []);
  for (const id of ids) assert.deepEqual(done[id], [0, 1, 2, 3, 4], id);
  for (const [id, ns] of calls) assert.deepEqual(ns, [...ns].sort((x, y) => x - y), id);
  assert.deepEqual(calls.filter(([id]) => id === "p1").map(([, ns]) => ns), [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]);
  assert.equal(w.answerNext, env.ORDERLY_PULL_NEXT === "1", "answers take the next window where the node knows next; plain pulls otherwise");
  // The worker token opens the pull routes of its queue only.
  await assert.rejects(wc.enqueue(q.plain, [{ id: "x" }]), (e) => e instanceof OrderlyError && e.status === 403);
});

// A worker on the lease queue whose handler outlives the first window's
// lease as first granted: the windows seen as [retry_count, deadline first
// seen, deadline at the end], the worker's log, and whether the id is gone
// from the queue at the end.
async function leaseRun(id, opts) {
  await c.enqueue(q.lease, [{ id, payload: { n: 1 } }]);
  const seen = [];
  const logs = [];
  const w = new Worker(c, q.lease, async (win) => {
    const first = win.deadline;
    if (seen.length === 0) while (Date.now() / 1000 < first + 1.5) await new Promise((r) => setTimeout(r, 50));
    seen.push([win.jobs[0].retry_count, first, win.deadline]);
  }, { waitSeconds: 1, log: (m) => logs.push(m), ...opts });
  w.start();
  let gone = false;
  try {
    for (const limit = Date.now() + 30_000; Date.now() < limit && !gone;) {
      await new Promise((r) => setTimeout(r, 100));
      if (!seen.length) continue;
      const j = await c.job(q.lease, id);
      gone = j === null || (j.queued === null && !j.in_flight);
    }
  } finally {
    assert.equal(await w.stop(15_000), true, "the worker stopped");
  }
  return { seen, logs, gone };
}

test("a lease ends without extension: the late answer is refused", { skip }, async () => {
  const { seen, logs, gone } = await leaseRun("slow-no-extend", { extendBy: 0 });
  assert.ok(gone, "the id came again and was acknowledged");
  assert.deepEqual(seen.map((s) => s[0]), [-1, 0], "the late answer committed nothing: the id failed once");
  assert.equal(seen[0][1], seen[0][2], "no extension");
  assert.match(logs.join("\n"), /409/);
});

test("extension keeps the lease: the answer commits", { skip }, async () => {
  const { seen, logs, gone } = await leaseRun("slow-extended", { extendBy: 3, extendWhen: 2 });
  assert.ok(gone, "the answer committed");
  assert.equal(seen.length, 1, "delivered once");
  assert.ok(seen[0][2] > seen[0][1], "the deadline moved");
  assert.deepEqual(logs.filter((m) => !m.includes("plain pulls")), []);
});
