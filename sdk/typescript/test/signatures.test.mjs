// Signature checks: Standard Webhooks' published vectors, Orderly's from the Go code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Answer, SignatureError, parseRequest, payloadBytes, signOrderly, signStandard, verifyOrderly, verifyRequest, verifyStandard } from "../dist/src/index.js";

// github.com/standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts
// ("test sign function") and libraries/python/tests/test_webhooks.py (test_sign_function,
// test_multi_sig_payload_is_valid for the invalid signature).
const VEC = { secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id: "msg_p5jXN8AQM9LWM0D4loKWxJek", ts: 1614265330,
  body: '{"test": 2432232314}', sig: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  invalid: "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=" };
// wire.Sign([]byte("s3cr3t"), time.Unix(1700000000, 0), body), printed by the Go code.
const ORD = { secret: "s3cr3t", body: '{"queue":"q","shard":0,"jobs":[]}',
  sig: "t=1700000000,v1=7f86b0f9c3394a62350bf662e0075175aa42c50ef24948360a4e76c9ef40e7e1" };

test("standard webhooks: the published vector", () => {
  assert.equal(signStandard(VEC.secret, VEC.id, VEC.ts, VEC.body), VEC.sig);
  verifyStandard(VEC.id, String(VEC.ts), VEC.sig, VEC.body, VEC.secret, { now: VEC.ts });
  verifyStandard(VEC.id, String(VEC.ts), VEC.sig, new TextEncoder().encode(VEC.body), VEC.secret, { now: VEC.ts });
  assert.throws(() => verifyStandard(VEC.id, String(VEC.ts), VEC.invalid, VEC.body, VEC.secret, { now: VEC.ts }), SignatureError);
  const several = [VEC.invalid, "v2," + VEC.invalid.slice(3), VEC.sig, VEC.invalid].join(" ");
  verifyStandard(VEC.id, String(VEC.ts), several, VEC.body, VEC.secret, { now: VEC.ts });
});

test("standard webhooks: tolerance, refusals, rotation", () => {
  verifyStandard(VEC.id, String(VEC.ts), VEC.sig, VEC.body, VEC.secret, { now: VEC.ts + 300 });
  for (const now of [VEC.ts + 301, VEC.ts - 301]) {
    assert.throws(() => verifyStandard(VEC.id, String(VEC.ts), VEC.sig, VEC.body, VEC.secret, { now }), /tolerance/);
  }
  for (const c of [[undefined, String(VEC.ts), VEC.sig, VEC.body], [VEC.id, undefined, VEC.sig, VEC.body],
    [VEC.id, "hello", VEC.sig, VEC.body], [VEC.id, String(VEC.ts), undefined, VEC.body],
    [VEC.id, String(VEC.ts), VEC.sig, VEC.body + " "], [VEC.id + "x", String(VEC.ts), VEC.sig, VEC.body]]) {
    assert.throws(() => verifyStandard(...c, VEC.secret, { now: VEC.ts }), SignatureError, JSON.stringify(c));
  }
  assert.throws(() => verifyStandard(VEC.id, String(VEC.ts), VEC.sig, VEC.body, "", { now: VEC.ts }), SignatureError);
  const other = "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB";
  verifyStandard(VEC.id, String(VEC.ts), VEC.sig, VEC.body, [other, VEC.secret], { now: VEC.ts });
  assert.throws(() => verifyStandard(VEC.id, String(VEC.ts), VEC.sig, VEC.body, [other], { now: VEC.ts }), SignatureError);
});

test("orderly scheme: the Go vector", () => {
  assert.equal(signOrderly(ORD.secret, 1700000000, ORD.body), ORD.sig);
  verifyOrderly(ORD.sig, ORD.body, ORD.secret, { now: 1700000000 });
  verifyOrderly(ORD.sig, ORD.body, ["old", ORD.secret], { now: 1700000000 });
  assert.throws(() => verifyOrderly(ORD.sig, ORD.body, "other", { now: 1700000000 }), SignatureError);
  assert.throws(() => verifyOrderly(ORD.sig, ORD.body + " ", ORD.secret, { now: 1700000000 }), SignatureError);
  const bad = "0".repeat(64);
  verifyOrderly(`t=1700000000,v1=${bad},v1=${ORD.sig.split("v1=")[1]}`, ORD.body, ORD.secret, { now: 1700000000 });
  for (const h of ["", "t=1700000000", "v1=" + bad, "t=x,v1=" + bad, "t=1,t=2,v1=" + bad, "garbage", "t=1700000000,v1=zz"]) {
    assert.throws(() => verifyOrderly(h, ORD.body, ORD.secret, { now: 1700000000 }), SignatureError, h);
  }
  assert.throws(() => verifyOrderly(ORD.sig, ORD.body, ORD.secret, { now: 1700000301 }), /tolerance/);
  verifyOrderly(ORD.sig, ORD.body, ORD.secret, { now: 0, tolerance: -1 });
});

test("verifyRequest picks the scheme by the headers", () => {
  assert.equal(verifyRequest({ "orderly-signature": ORD.sig }, ORD.body, ORD.secret, { now: 1700000000 }), "orderly");
  const h = new Headers({ "webhook-id": VEC.id, "webhook-timestamp": String(VEC.ts), "webhook-signature": VEC.sig });
  assert.equal(verifyRequest(h, VEC.body, VEC.secret, { now: VEC.ts }), "standard");
  assert.throws(() => verifyRequest({}, ORD.body, ORD.secret), SignatureError);
});

test("request and answer", () => {
  const d = parseRequest('{"queue":"q","shard":2,"jobs":[{"id":"a","retry_count":-1,"perform_at":1.5,"state":{"n":1},"version":3,"timer":true,' +
    '"payloads":[{"payload":{"x":1},"score":1,"headers":{"h":"v"}},{"payload_base64":"AP8=","score":2}]}]}', { "Orderly-Delivery": "q/2/1/9" });
  assert.equal(d.name, "q/2/1/9");
  assert.deepEqual(d.jobs[0].state, { n: 1 });
  assert.deepEqual([...payloadBytes(d.jobs[0].payloads[1])], [0, 255]);
  assert.deepEqual(new Answer().toJSON(), {});
  const a = new Answer().fail("a", "boom").retryAfter("b", "90s").dead("c", "bad").discard("d", "old")
    .setState("e", { n: 2 }).setState("f", null).setTimer("e", 0).setTimer("f", null)
    .emit({ from: "e", queue: "other", id: "x", payload: { k: 1 }, score: 3, perform_in: 5 }).setResult("e", [1]);
  assert.deepEqual(a.toJSON(), {
    failed: { a: "boom" }, retry_in: { b: "90s" }, dead: { c: "bad" }, discard: { d: "old" },
    state: { e: { n: 2 }, f: null }, timers: { e: "1970-01-01T00:00:00Z", f: null },
    emit: [{ from: "e", queue: "other", id: "x", payload: { k: 1 }, score: 3, perform_in: 5 }], result: { e: [1] } });
});
