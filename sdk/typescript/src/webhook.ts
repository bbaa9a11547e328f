import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Delay, Emit, JSONValue, WebhookAnswer, WebhookJob, WebhookRequest } from "./types.js";

/** How far a signature's timestamp may be from now, either way, in seconds (as wire.DefaultTolerance). */
export const DEFAULT_TOLERANCE = 300;

/** A missing, malformed, wrong or too old signature: answer 401. */
export class SignatureError extends Error {
  constructor(message: string) {
    super(`orderly: ${message}`);
    this.name = "SignatureError";
  }
}

/** A secret: a string (its UTF-8 bytes; for Standard Webhooks "whsec_<base64>") or bytes. */
export type Secret = string | Uint8Array;

/** Options of the checks. */
export interface VerifyOptions {
  /** Seconds either way [300]; negative turns the check off. */
  tolerance?: number;
  /** Now, in unix seconds [the clock]. */
  now?: number;
}

const enc = new TextEncoder();
const bytes = (s: Secret | string): Uint8Array => (typeof s === "string" ? enc.encode(s) : s);
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let i = 0;
  for (const p of parts) {
    out.set(p, i);
    i += p.length;
  }
  return out;
};
const equal = (a: Uint8Array, b: Uint8Array) => a.length === b.length && timingSafeEqual(a, b);

function keysOf(secrets: Secret | Secret[]): Secret[] {
  const list = (Array.isArray(secrets) ? secrets : [secrets]).filter((s) => s.length > 0);
  if (list.length === 0) throw new SignatureError("the secret is empty; refusing every signature");
  return list;
}

function checkAge(ts: number, o: VerifyOptions) {
  const tol = o.tolerance ?? DEFAULT_TOLERANCE;
  if (tol < 0) return;
  const now = o.now ?? Date.now() / 1000;
  if (Math.abs(now - ts) > (tol || DEFAULT_TOLERANCE)) throw new SignatureError("signature timestamp outside the tolerance");
}

// Orderly's scheme.

/** The Orderly-Signature value for body sent at timestamp (unix seconds). */
export function signOrderly(secret: Secret, timestamp: number, body: string | Uint8Array): string {
  const ts = String(Math.trunc(timestamp));
  const mac = createHmac("sha256", bytes(secret)).update(concat(enc.encode(ts + "."), bytes(body))).digest("hex");
  return `t=${ts},v1=${mac}`;
}

/** Checks an Orderly-Signature header against the raw body under one of secrets. Throws SignatureError. */
export function verifyOrderly(header: string | undefined, body: string | Uint8Array, secrets: Secret | Secret[], o: VerifyOptions = {}): void {
  const keys = keysOf(secrets);
  if (!header || !header.trim()) throw new SignatureError("no Orderly-Signature header");
  let ts: string | undefined;
  const sigs: Uint8Array[] = [];
  for (const raw of header.split(",")) {
    const part = raw.trim();
    const eq = part.indexOf("=");
    if (eq < 0) throw new SignatureError("Orderly-Signature: a part is not key=value");
    const k = part.slice(0, eq);
    const v = part.slice(eq + 1);
    if (k === "t") {
      if (ts !== undefined) throw new SignatureError("Orderly-Signature: two timestamps");
      ts = v;
    } else if (k === "v1") {
      if (!/^[0-9a-fA-F]{64}$/.test(v)) throw new SignatureError("Orderly-Signature: v1 is not a hex SHA-256 HMAC");
      sigs.push(Uint8Array.from(v.match(/../g)!.map((h) => parseInt(h, 16))));
    }
  }
  if (ts === undefined) throw new SignatureError("Orderly-Signature: no timestamp (t=)");
  if (!/^-?\d+$/.test(ts)) throw new SignatureError("Orderly-Signature: the timestamp is not an integer");
  if (sigs.length === 0) throw new SignatureError("Orderly-Signature: no v1 signature");
  const signed = concat(enc.encode(ts + "."), bytes(body));
  let matched = false;
  for (const key of keys) {
    const want = createHmac("sha256", bytes(key)).update(signed).digest();
    for (const sig of sigs) if (equal(sig, want)) matched = true;
  }
  if (!matched) throw new SignatureError("Orderly-Signature: no v1 signature matches the body");
  checkAge(Number(ts), o);
}

// Standard Webhooks.

/** The HMAC key of a Standard Webhooks secret "whsec_<base64>" (or bare base64). */
export function standardKey(secret: string): Uint8Array {
  const b64 = (secret.startsWith("whsec_") ? secret.slice(6) : secret).replace(/=+$/, "");
  if (!/^[A-Za-z0-9+/]+$/.test(b64)) throw new SignatureError("a Standard Webhooks secret is whsec_ and a base64 key");
  const bin = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

// As wire.VerifyRequest: a "whsec_" string is decoded, other secrets are the key's bytes.
function standardKeyOf(secret: Secret): Uint8Array {
  return typeof secret === "string" && secret.startsWith("whsec_") ? standardKey(secret) : bytes(secret);
}

function b64(u: Uint8Array): string {
  let s = "";
  for (const b of u) s += String.fromCharCode(b);
  return btoa(s);
}

/** The webhook-signature value: "v1," and the base64 HMAC-SHA256 of "<id>.<timestamp>.<body>". */
export function signStandard(secret: Secret, msgId: string, timestamp: number, body: string | Uint8Array): string {
  const mac = createHmac("sha256", standardKeyOf(secret)).update(concat(enc.encode(`${msgId}.${Math.trunc(timestamp)}.`), bytes(body)));
  return "v1," + b64(mac.digest());
}

/** Checks Standard Webhooks headers (webhook-id, -timestamp, -signature) against the raw body. Throws SignatureError. */
export function verifyStandard(
  msgId: string | undefined,
  timestamp: string | undefined,
  signature: string | undefined,
  body: string | Uint8Array,
  secrets: Secret | Secret[],
  o: VerifyOptions = {},
): void {
  const keys = keysOf(secrets).map(standardKeyOf);
  if (!signature || !signature.trim()) throw new SignatureError("no webhook-signature header");
  if (!msgId) throw new SignatureError("no webhook-id header");
  if (!timestamp || !/^-?\d+$/.test(timestamp)) throw new SignatureError("webhook-timestamp is not an integer");
  const signed = concat(enc.encode(`${msgId}.${timestamp}.`), bytes(body));
  const wants = keys.map((k) => createHmac("sha256", k).update(signed).digest());
  let matched = false;
  for (const part of signature.split(/\s+/)) {
    const comma = part.indexOf(",");
    if (comma < 0 || part.slice(0, comma) !== "v1") continue;
    let sig: Uint8Array;
    try {
      sig = Uint8Array.from(atob(part.slice(comma + 1)), (c) => c.charCodeAt(0));
    } catch {
      continue;
    }
    for (const want of wants) if (equal(sig, want)) matched = true;
  }
  if (!matched) throw new SignatureError("webhook-signature: no v1 signature matches the body");
  checkAge(Number(timestamp), o);
}

/** Headers as a Headers object, a plain object (any case) or node:http's. */
export type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(h: HeaderBag, name: string): string | undefined {
  if (typeof (h as Headers).get === "function") return (h as Headers).get(name) ?? undefined;
  const low = name.toLowerCase();
  for (const [k, v] of Object.entries(h as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() === low) return Array.isArray(v) ? v.join(",") : v;
  }
  return undefined;
}

/** Verifies a delivery by its headers: Orderly-Signature, else Standard Webhooks. Returns the scheme; throws SignatureError. */
export function verifyRequest(headers: HeaderBag, body: string | Uint8Array, secrets: Secret | Secret[], o: VerifyOptions = {}): "orderly" | "standard" {
  const sig = header(headers, "orderly-signature");
  if (sig !== undefined) {
    verifyOrderly(sig, body, secrets, o);
    return "orderly";
  }
  const std = header(headers, "webhook-signature");
  if (std !== undefined) {
    verifyStandard(header(headers, "webhook-id"), header(headers, "webhook-timestamp"), std, body, secrets, o);
    return "standard";
  }
  keysOf(secrets);
  throw new SignatureError("no Orderly-Signature or webhook-signature header");
}

/** A decoded delivery: the request and its Orderly-Delivery name. */
export interface Delivery extends WebhookRequest {
  name: string;
}

/** Decodes a delivery's body (verify it first). */
export function parseRequest(body: string | Uint8Array, headers?: HeaderBag): Delivery {
  const text = typeof body === "string" ? body : new TextDecoder().decode(body);
  const req = JSON.parse(text) as WebhookRequest;
  return { ...req, jobs: req.jobs ?? [], name: (headers && header(headers, "orderly-delivery")) || "" };
}

/** A payload's bytes, whichever way it was carried. */
export function payloadBytes(p: { payload?: JSONValue; payload_base64?: string }): Uint8Array {
  if (p.payload_base64 !== undefined) return Uint8Array.from(atob(p.payload_base64), (c) => c.charCodeAt(0));
  return enc.encode(JSON.stringify(p.payload ?? null));
}

const rfc3339 = (at: Date | number | string) =>
  typeof at === "string" ? at : (typeof at === "number" ? new Date(at * 1000) : at).toISOString().replace(/\.000Z$/, "Z");

/** Builds a WebhookAnswer; ids not named are done. Each method returns this. */
export class Answer {
  readonly body: Required<WebhookAnswer> = { failed: {}, retry_in: {}, dead: {}, discard: {}, state: {}, timers: {}, emit: [], result: {} };

  /** The id failed: retried by the queue's policy. */
  fail(id: string, error: string): this {
    this.body.failed[id] = error;
    return this;
  }
  /** The id is retried after delay (seconds, or "90s"). */
  retryAfter(id: string, delay: Delay, error?: string): this {
    this.body.retry_in[id] = delay;
    if (error) this.body.failed[id] = error;
    return this;
  }
  /** The id goes to the morgue now. */
  dead(id: string, error: string): this {
    this.body.dead[id] = error;
    return this;
  }
  /** The id's payloads are discarded without a retry. */
  discard(id: string, reason: string): this {
    this.body.discard[id] = reason;
    return this;
  }
  /** Sets (a JSON value) or deletes (null) the id's state, committed with the ack. */
  setState(id: string, state: JSONValue): this {
    this.body.state[id] = state;
    return this;
  }
  /** Sets the id's timer (a Date, unix seconds or RFC 3339), or clears it (null). */
  setTimer(id: string, at: Date | number | string | null): this {
    this.body.timers[id] = at === null ? null : rfc3339(at);
    return this;
  }
  /** Enqueues a job on behalf of e.from, committed with its ack. */
  emit(e: Emit): this {
    this.body.emit.push(e);
    return this;
  }
  /** Sets the id's result (kept on a queue with retain_finished). */
  setResult(id: string, result: JSONValue): this {
    this.body.result[id] = result;
    return this;
  }
  /** The answer without empty fields ({} acknowledges every id). */
  toJSON(): WebhookAnswer {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(this.body)) {
      if (Array.isArray(v) ? v.length : Object.keys(v).length) out[k] = v;
    }
    return out as WebhookAnswer;
  }
}

/** A receiver's handler: an Answer (or nothing: every id done); a throw fails the whole delivery. */
export type DeliveryHandler = (d: Delivery) => Answer | WebhookAnswer | void | Promise<Answer | WebhookAnswer | void>;

/** Verifies, decodes and handles one delivery; returns the HTTP status and body to answer. */
export async function handleDelivery(
  headers: HeaderBag,
  body: Uint8Array | string,
  handler: DeliveryHandler,
  secrets: Secret | Secret[],
  o: VerifyOptions = {},
): Promise<{ status: number; body: string }> {
  try {
    verifyRequest(headers, body, secrets, o);
  } catch (e) {
    return { status: 401, body: JSON.stringify({ error: (e as Error).message }) };
  }
  try {
    const a = await handler(parseRequest(body, headers));
    return { status: 200, body: JSON.stringify(a instanceof Answer ? a.toJSON() : a ?? {}) };
  } catch (e) {
    return { status: 500, body: JSON.stringify({ error: (e as Error).message }) };
  }
}

/** A node:http request listener for a receiver: http.createServer(receiver(handler, secret)). */
export function receiver(handler: DeliveryHandler, secrets: Secret | Secret[], o: VerifyOptions & { maxBytes?: number } = {}) {
  const max = o.maxBytes ?? 64 << 20;
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Uint8Array[] = [];
    let n = 0;
    for await (const c of req) {
      n += c.length;
      if (n > max) {
        res.writeHead(413, { "Content-Type": "application/json" }).end('{"error":"too large"}');
        return;
      }
      chunks.push(c);
    }
    const out = await handleDelivery(req.headers, concat(...chunks), handler, secrets, o);
    res.writeHead(out.status, { "Content-Type": "application/json" }).end(out.body);
  };
}

export type { WebhookJob };
