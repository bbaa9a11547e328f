// The pull-worker loop against an in-process fake of the pull routes: the
// shapes of docs/contract.md §6.6 (pull 200/204, answer 200/409, extend
// 200/409). An answer's "next" is served (next "serve": the next window in
// the 200, as a node that knows it does) or refused with a 400 that does not
// name it (next "refuse", as today's nodes do).
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { once } from "node:events";
import { Answer, Client, Worker } from "../dist/src/index.js";

const WAIT_MS = 10_000; // how long a test waits for an event before failing (not a timing assert)

async function fakePull(t, next = "refuse") {
  const f = { windows: [], answers: {}, extends: [], lost: new Set(), pulls: 0, deadlineIn: 60, waiters: [], askedNext: {}, via: {}, refusals: 0 };
  f.handOut = (via) => {
    const [lease, jobs] = f.windows.shift();
    f.via[lease] = via;
    return { lease, deadline: Date.now() / 1000 + f.deadlineIn, jobs };
  };
  f.add = (lease, ...ids) => f.windows.push([lease, ids.map((id) => ({ id, retry_count: -1, perform_at: 1, payloads: [{ payload: { n: id }, score: 1 }] }))]);
  f.notify = () => { for (const w of f.waiters.splice(0)) w(); };
  f.until = async (cond, what) => {
    const limit = Date.now() + WAIT_MS;
    while (!cond()) {
      if (Date.now() > limit) throw new Error(`fake: waited for ${what}`);
      await new Promise((r) => { f.waiters.push(r); setTimeout(r, 50); });
    }
  };
  const server = http.createServer(async (req, res) => {
    let raw = "";
    for await (const c of req) raw += c;
    const body = JSON.parse(raw);
    assert.equal(req.headers.authorization, "Bearer tok");
    const parts = req.url.split("/"); // /api/v1/queues/q/pull[/lease/op]
    const send = (status, doc) => { res.writeHead(status, { "Content-Type": "application/json" }).end(doc ? JSON.stringify(doc) : ""); f.notify(); };
    if (parts.length === 6) {
      assert.deepEqual(Object.keys(body).sort(), ["max_ids", "wait"]);
      f.pulls++;
      if (!f.windows.length) return setTimeout(() => send(204), 20);
      return send(200, f.handOut("pull"));
    }
    const [lease, op] = [parts[6], parts[7]];
    if (op === "extend") {
      f.extends.push([lease, body.by]);
      if (f.lost.has(lease)) return send(409, { error: "lease lost", reason: "deadline" });
      return send(200, { deadline: Date.now() / 1000 + body.by });
    }
    const nxt = body.next;
    delete body.next;
    if (nxt !== undefined && next === "refuse") {
      f.refusals++;
      return send(400, { error: "the answer must be empty, {} or a webhook answer" });
    }
    f.answers[lease] = body;
    f.askedNext[lease] = nxt ?? null;
    if (f.lost.has(lease)) return send(409, { error: "lease lost", reason: "deadline" });
    if (nxt === undefined) return send(200, { accepted: true });
    assert.deepEqual(Object.keys(nxt).sort(), ["max_ids", "wait"]);
    if (f.windows.length) return send(200, { accepted: true, next: f.handOut("next") });
    setTimeout(() => send(200, { accepted: true }), 20);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => { server.closeAllConnections(); server.close(); });
  f.client = new Client(`http://127.0.0.1:${server.address().port}`, { token: "tok" });
  return f;
}

test("answers each window", async (t) => {
  const f = await fakePull(t);
  f.add("L1", "a", "b"); f.add("L2", "c"); f.add("L3", "d");
  const logs = [];
  const w = new Worker(f.client, "q", (win) => {
    if (win.lease === "L1") return new Answer().fail("a", "boom").setState("b", { n: 1 });
    if (win.lease === "L3") throw new Error("broken");
  }, { concurrency: 2, waitSeconds: 1, log: (m) => logs.push(m) });
  w.start();
  await f.until(() => Object.keys(f.answers).length === 3, "3 answers");
  assert.equal(await w.stop(WAIT_MS), true);
  assert.deepEqual(f.answers.L1, { failed: { a: "boom" }, state: { b: { n: 1 } } });
  assert.deepEqual(f.answers.L2, {}, "{} acknowledges every id");
  assert.deepEqual(f.answers.L3, { failed: { d: "broken" } }, "a throw fails every id");
});

test("concurrency: windows are held at once", async (t) => {
  const f = await fakePull(t);
  for (let i = 0; i < 3; i++) f.add(`L${i}`, `id${i}`);
  let held = 0;
  let release;
  const all = new Promise((r) => (release = r));
  const w = new Worker(f.client, "q", async () => { if (++held === 3) release(); await all; }, { concurrency: 3, waitSeconds: 1 });
  w.start();
  await f.until(() => Object.keys(f.answers).length === 3, "3 answers, only if 3 windows were held at once");
  assert.equal(await w.stop(WAIT_MS), true);
});

test("extends the deadline while the handler runs", async (t) => {
  const f = await fakePull(t);
  f.deadlineIn = 0.2; // less than extendWhen: extended at once
  f.add("L1", "a");
  const w = new Worker(f.client, "q", () => f.until(() => f.extends.length > 0, "an extend"), { waitSeconds: 1, extendBy: 30, extendWhen: 5 });
  w.start();
  await f.until(() => "L1" in f.answers, "the answer");
  assert.equal(await w.stop(WAIT_MS), true);
  assert.deepEqual(f.extends[0], ["L1", 30]);
  assert.deepEqual(f.answers.L1, {});
});

test("one timer of the worker extends each window it holds, again and again", async (t) => {
  const f = await fakePull(t);
  f.deadlineIn = 1.3; // due a little after the pull: extended by the worker's timer, not at once
  f.add("L1", "a"); f.add("L2", "b"); f.add("L3", "c");
  const extended = (lease) => f.extends.filter(([l]) => l === lease).length;
  const w = new Worker(f.client, "q", (win) => f.until(() => extended(win.lease) >= 2, `2 extends of ${win.lease}`),
    { concurrency: 3, waitSeconds: 1, extendBy: 2, extendWhen: 1 });
  w.start();
  await f.until(() => ["L1", "L2", "L3"].every((l) => l in f.answers), "3 answers");
  assert.equal(await w.stop(WAIT_MS), true);
  const after = f.extends.length;
  await new Promise((r) => setTimeout(r, 600)); // past a period of the timer: nothing answered is extended
  assert.equal(f.extends.length, after);
  for (const l of ["L1", "L2", "L3"]) {
    assert.ok(extended(l) >= 2, l);
    assert.deepEqual(f.answers[l], {});
  }
  assert.ok(f.extends.every(([, by]) => by === 2));
});

test("a lost lease is logged and dropped; the worker goes on", async (t) => {
  const f = await fakePull(t);
  f.lost.add("L1");
  f.add("L1", "a"); f.add("L2", "b");
  const logs = [];
  const w = new Worker(f.client, "q", () => {}, { waitSeconds: 1, log: (m) => logs.push(m) });
  w.start();
  await f.until(() => "L2" in f.answers, "the second answer");
  assert.equal(await w.stop(WAIT_MS), true);
  assert.ok("L1" in f.answers);
  assert.match(logs.join("\n"), /409.*deadline/);
});

test("graceful stop answers what it holds and pulls no more", async (t) => {
  const f = await fakePull(t);
  f.add("L1", "a");
  let held, release;
  const isHeld = new Promise((r) => (held = r));
  const released = new Promise((r) => (release = r));
  const w = new Worker(f.client, "q", async () => { held(); await released; return new Answer().setResult("a", "late"); }, { waitSeconds: 0.1 });
  w.start();
  await isHeld;
  const stopped = w.stop(WAIT_MS);
  const pulls = f.pulls;
  release();
  assert.equal(await stopped, true);
  assert.deepEqual(f.answers.L1, { result: { a: "late" } });
  assert.equal(f.pulls, pulls, "no pull after stop");
});

test("an answer brings the next window: one request per window", async (t) => {
  const f = await fakePull(t, "serve");
  f.add("L1", "a"); f.add("L2", "b"); f.add("L3", "c");
  const w = new Worker(f.client, "q", () => {}, { maxIds: 3, waitSeconds: 1 });
  w.start();
  await f.until(() => Object.keys(f.answers).length === 3, "3 answers");
  f.add("L4", "d"); // after an answer whose 200 had no next: a plain pull takes it
  await f.until(() => Object.keys(f.answers).length === 4, "4 answers");
  assert.equal(await w.stop(WAIT_MS), true);
  assert.deepEqual(f.answers, { L1: {}, L2: {}, L3: {}, L4: {} });
  assert.deepEqual(f.via, { L1: "pull", L2: "next", L3: "next", L4: "pull" });
  assert.deepEqual(f.askedNext.L1, { max_ids: 3, wait: 1 });
  assert.equal(w.answerNext, true);
});

test("a refused next falls back to plain pulls, once", async (t) => {
  const f = await fakePull(t);
  f.add("L1", "a"); f.add("L2", "b"); f.add("L3", "c");
  const logs = [];
  const w = new Worker(f.client, "q", (win) => new Answer().setResult(win.jobs[0].id, "r"), { waitSeconds: 1, log: (m) => logs.push(m) });
  w.start();
  await f.until(() => Object.keys(f.answers).length === 3, "3 answers");
  assert.equal(await w.stop(WAIT_MS), true);
  assert.deepEqual(f.answers.L1, { result: { a: "r" } }, "the answer went again without next");
  assert.equal(f.refusals, 1, "refused once, then remembered");
  assert.deepEqual(f.via, { L1: "pull", L2: "pull", L3: "pull" });
  assert.deepEqual(Object.values(f.askedNext), [null, null, null]);
  assert.equal(w.answerNext, false);
  assert.match(logs.join("\n"), /plain pulls/);
});

test("a stopping worker takes no next window", async (t) => {
  const f = await fakePull(t, "serve");
  f.add("L1", "a");
  let held, release;
  const isHeld = new Promise((r) => (held = r));
  const released = new Promise((r) => (release = r));
  const w = new Worker(f.client, "q", async () => { held(); await released; }, { waitSeconds: 1 });
  w.start();
  await isHeld;
  f.add("L2", "b");
  const stopped = w.stop(WAIT_MS);
  release();
  assert.equal(await stopped, true);
  assert.deepEqual(f.answers, { L1: {} });
  assert.equal(f.askedNext.L1, null, "no next asked while stopping");
  assert.equal(f.via.L2, undefined);
});
