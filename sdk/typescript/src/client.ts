import * as http from "node:http";
import * as https from "node:https";
import type { Cancelled, EnqueueResult, FeedPage, JobLookup, JSONValue, NewJob, State } from "./types.js";

/** An error answer of the node: its status and {"error", "field"} (or {"error", "reason"}). */
export class OrderlyError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(`orderly: HTTP ${status}: ${message}`);
    this.name = status === 409 ? "Conflict" : "OrderlyError";
  }
  /** A stale compare-and-set version, or a lease no longer valid. */
  get conflict(): boolean {
    return this.status === 409;
  }
}

/** Options of a Client. */
export interface ClientOptions {
  /** The node's http_token (or read token for reads), sent as a bearer token. */
  token?: string;
  /** Per-request timeout in milliseconds [30000]. */
  timeoutMs?: number;
}

const seg = (s: string) => encodeURIComponent(s);

/** An answer's status and text as request returns or throws them. */
function decode<T>(status: number, statusText: string, text: string): { status: number; body: T } {
  let doc: unknown = undefined;
  if (text) {
    try {
      doc = JSON.parse(text);
    } catch {
      doc = { error: text };
    }
  }
  if (status < 200 || status > 299) {
    const d = (doc && typeof doc === "object" ? doc : {}) as Record<string, unknown>;
    throw new OrderlyError(status, String(d.error ?? d.reason ?? statusText), d);
  }
  return { status, body: doc as T };
}

/** A client of a node's HTTP API. */
export class Client {
  readonly baseURL: string;
  readonly token?: string;
  readonly timeoutMs: number;
  // node:http with keep-alive connections of this client's own: a request
  // costs a fraction of fetch's CPU (a pull worker makes one per window).
  private readonly send: typeof http.request;
  private readonly agent: http.Agent;
  private readonly host: string;
  private readonly port: string;
  private readonly prefix: string;
  private readonly auth?: string;

  constructor(baseURL: string, opts: ClientOptions = {}) {
    this.baseURL = baseURL.replace(/\/+$/, "");
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    const u = new URL(this.baseURL);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`orderly: ${baseURL}: not an http(s) URL`);
    const tls = u.protocol === "https:";
    this.send = tls ? https.request : http.request;
    this.agent = tls ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
    this.host = u.hostname.replace(/^\[(.*)\]$/, "$1");
    this.port = u.port;
    this.prefix = u.pathname.replace(/\/+$/, "");
    if (this.token) this.auth = `Bearer ${this.token}`;
  }

  /** Sends a request; returns the status and decoded JSON (undefined when empty). Non-2xx throw OrderlyError. */
  request<T = unknown>(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<{ status: number; body: T }> {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string | number> = {};
    if (data !== undefined) {
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = Buffer.byteLength(data);
    }
    if (this.auth) headers["Authorization"] = this.auth;
    const ms = timeoutMs ?? this.timeoutMs;
    return new Promise((resolve, reject) => {
      const req = this.send({ host: this.host, port: this.port, path: this.prefix + path, method, headers, agent: this.agent }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (text += c));
        res.on("aborted", () => fail(new Error("orderly: the response was cut short")));
        res.on("error", (e) => fail(e ?? new Error("orderly: the response failed")));
        res.on("end", () => {
          clearTimeout(timer);
          try {
            resolve(decode<T>(res.statusCode ?? 0, res.statusMessage ?? "", text));
          } catch (e) {
            reject(e);
          }
        });
      });
      const fail = (e: Error) => {
        clearTimeout(timer);
        req.destroy();
        reject(e);
      };
      const timer = setTimeout(() => fail(new Error(`orderly: ${method} ${path}: no answer within ${ms} ms`)), ms);
      req.on("error", fail);
      req.end(data);
    });
  }

  /** Enqueues jobs, all or nothing. */
  async enqueue(queue: string, jobs: NewJob[]): Promise<EnqueueResult> {
    return (await this.request<EnqueueResult>("POST", `/api/v1/queues/${seg(queue)}/jobs`, jobs)).body;
  }

  /** Everything known of an id, or null when nothing is. */
  async job(queue: string, id: string): Promise<JobLookup | null> {
    try {
      return (await this.request<JobLookup>("GET", `/api/v1/queues/${seg(queue)}/jobs/${seg(id)}`)).body;
    } catch (e) {
      if (e instanceof OrderlyError && e.status === 404) return null;
      throw e;
    }
  }

  /** Cancels an id everywhere (docs/contract.md §3.13). */
  async cancel(queue: string, id: string, mode?: "kill" | "delete"): Promise<Cancelled> {
    const path = `/api/v1/queues/${seg(queue)}/jobs/${seg(id)}/actions/cancel`;
    return (await this.request<Cancelled>("POST", path, mode ? { mode } : {})).body;
  }

  /** The state of an id of a stateful queue (version 0 when none). */
  async getState(queue: string, id: string): Promise<State> {
    return (await this.request<State>("GET", `/api/v1/queues/${seg(queue)}/state/${seg(id)}`)).body;
  }

  /** Compare-and-set: replaces `version` (0: none) with `state` (null deletes). Returns the new version; a stale version throws an OrderlyError with conflict true. */
  async setState(queue: string, id: string, state: JSONValue, version: number): Promise<number> {
    const r = await this.request<{ version: number }>("PUT", `/api/v1/queues/${seg(queue)}/state/${seg(id)}`, { state, version });
    return r.body.version;
  }

  /** Reads the change feed after `from` ("0", "$" or a pos); `waitSeconds` long-polls (at most 30). */
  async feed(queue: string, from = "0", opts: { limit?: number; waitSeconds?: number } = {}): Promise<FeedPage> {
    const q = new URLSearchParams({ from });
    if (opts.limit) q.set("limit", String(opts.limit));
    if (opts.waitSeconds) q.set("wait", `${opts.waitSeconds}s`);
    const timeout = this.timeoutMs + (opts.waitSeconds ?? 0) * 1000;
    return (await this.request<FeedPage>("GET", `/api/v1/queues/${seg(queue)}/feed?${q}`, undefined, timeout)).body;
  }
}
