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

/** A client of a node's HTTP API. */
export class Client {
  readonly baseURL: string;
  readonly token?: string;
  readonly timeoutMs: number;

  constructor(baseURL: string, opts: ClientOptions = {}) {
    this.baseURL = baseURL.replace(/\/+$/, "");
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
  }

  /** Sends a request; returns the status and decoded JSON (undefined when empty). Non-2xx throw OrderlyError. */
  async request<T = unknown>(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (this.token) headers["Authorization"] = `Bearer ${this.token}`;
    const res = await fetch(this.baseURL + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs ?? this.timeoutMs),
    });
    const text = await res.text();
    let doc: unknown = undefined;
    if (text) {
      try {
        doc = JSON.parse(text);
      } catch {
        doc = { error: text };
      }
    }
    if (!res.ok) {
      const d = (doc && typeof doc === "object" ? doc : {}) as Record<string, unknown>;
      throw new OrderlyError(res.status, String(d.error ?? d.reason ?? res.statusText), d);
    }
    return { status: res.status, body: doc as T };
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
