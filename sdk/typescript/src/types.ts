// Wire shapes of the HTTP API (docs/http-api.md, web/openapi/openapi.yaml)
// and of the webhook protocol (docs/webhooks.md, webhook/wire).

/** Any JSON value. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [k: string]: JSONValue };

/** Seconds (fractions allowed) or a Go duration string such as "90s". */
export type Delay = number | string;

/** A job to enqueue (NewJob). Give payload or payload_base64, perform_in or perform_at. */
export interface NewJob {
  id: string;
  payload?: JSONValue;
  payload_base64?: string;
  score?: number;
  /** unix seconds */
  perform_at?: number;
  perform_in?: Delay;
  headers?: Record<string, string> | null;
  dedup_key?: string | null;
  /** unix seconds: not handed to a handler by then, the payload is discarded at fetch. */
  expires_at?: number;
  /** From now; at most one of expires_at and expires_in. */
  expires_in?: Delay;
  /** 1 (first) to 4; none means 1. Orders the due ids of a shard. */
  priority?: number | null;
}

/** The answer to an enqueue. */
export interface EnqueueResult {
  enqueued: number;
  duplicates: number;
}

/** A stored payload. */
export interface Payload {
  payload?: JSONValue;
  payload_base64?: string;
  score: number;
  headers?: Record<string, string>;
  /** unix seconds, when the payload expires; absent when it never does. */
  expires_at?: number;
}

/** A stateful queue's state of an id (GET .../state/{id}). */
export interface State {
  state?: JSONValue;
  state_base64?: string;
  version: number;
  deleted?: true;
}

/** One entry of the change feed. */
export interface FeedEntry {
  pos: string;
  id: string;
  version: number;
  state?: JSONValue;
  state_base64?: string;
  state_sha1?: string;
  deleted?: true;
  at: number;
}

/** A page of the change feed. */
export interface FeedPage {
  entries: FeedEntry[];
  next: string;
}

/** What a cancel did. */
export interface Cancelled {
  mode: "kill" | "delete";
  killed: number;
  deleted: number;
  in_flight: boolean;
}

/** Everything known of an id (GET .../jobs/{id}); the nested records are left loose. */
export interface JobLookup {
  queue: string;
  shard: number;
  id: string;
  in_flight: boolean;
  queued: { perform_at: number; retry_count: number; error: string; payloads: Payload[] | null; payload_count: number } | null;
  processing: Record<string, JSONValue> | null;
  state?: State;
  timer?: number;
  morgue?: Record<string, JSONValue>;
  finished?: Record<string, JSONValue>;
}

/** A job of a webhook delivery or a pull window (webhook/wire.Job). */
export interface WebhookJob {
  id: string;
  /** -1 for a job that never failed */
  retry_count: number;
  /** unix seconds */
  perform_at: number;
  error?: string;
  state?: JSONValue;
  state_base64?: string;
  deleted?: true;
  version?: number;
  timer?: true;
  payloads: Payload[];
}

/** The body of a webhook delivery (webhook/wire.Request). */
export interface WebhookRequest {
  queue: string;
  shard: number;
  jobs: WebhookJob[];
}

/** A job an answer enqueues on behalf of the id `from`. */
export interface Emit {
  from: string;
  queue: string;
  id: string;
  payload?: JSONValue;
  payload_base64?: string;
  score?: number;
  perform_in?: Delay;
  expires_in?: Delay;
  headers?: Record<string, string>;
}

/** The answer to a delivery or a pull window (webhook/wire.Answer); ids not named are done. */
export interface WebhookAnswer {
  failed?: Record<string, string>;
  retry_in?: Record<string, Delay>;
  dead?: Record<string, string>;
  discard?: Record<string, string>;
  state?: Record<string, JSONValue>;
  /** RFC 3339, or null to clear */
  timers?: Record<string, string | null>;
  emit?: Emit[];
  result?: Record<string, JSONValue>;
}

/** POST /api/v1/queues/{q}/pull: 200's body. */
export interface PullWindow {
  lease: string;
  /** unix seconds */
  deadline: number;
  jobs: WebhookJob[];
}

/** POST .../pull/{lease}/answer: 200's body. */
export interface PullAnswered {
  accepted: boolean;
  /** Ids of a call that ended first: nothing was committed for them. */
  lost?: string[];
  /** The next window, when the answer asked for one ("next") and one came within its wait. */
  next?: PullWindow;
}

/** A 409 of a pull answer or extend. */
export interface LeaseLostBody {
  error: string;
  reason: string;
}
