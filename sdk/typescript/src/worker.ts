import { Client, OrderlyError } from "./client.js";
import { Answer } from "./webhook.js";
import type { PullAnswered, PullWindow, WebhookAnswer, WebhookJob } from "./types.js";

/** A window of ids held under a lease until its deadline (unix seconds). */
export interface Window {
  queue: string;
  lease: string;
  deadline: number;
  jobs: WebhookJob[];
  /** An extend was refused: the answer will commit nothing. */
  lost: boolean;
}

/** A window's handler: an Answer (ids not named are done) or nothing (every id done); a throw fails every id. */
export type WindowHandler = (w: Window) => Answer | WebhookAnswer | void | Promise<Answer | WebhookAnswer | void>;

/** Options of a Worker. */
export interface WorkerOptions {
  /** Windows handled at once (one pull loop each) [1]. */
  concurrency?: number;
  /** The most ids per window [10]. */
  maxIds?: number;
  /** Long-poll bound in seconds [5]. */
  waitSeconds?: number;
  /** Extend by this many seconds [30] (0: never extend) ... */
  extendBy?: number;
  /** ... when fewer than this many are left while the handler runs [10]. */
  extendWhen?: number;
  /** Pause after a failed pull, in seconds [1]. */
  retryPause?: number;
  /** Where warnings go [console.warn]. */
  log?: (msg: string) => void;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done);
  });

/**
 * A pull-worker loop (docs/contract.md §6.6): `concurrency` loops each pull a
 * window, give it to the handler while extending its deadline, and answer
 * it. stop() stops pulling and waits for the windows held to be answered.
 *
 * Each answer asks for the next window (`"next": {"max_ids", "wait"}`), so
 * that a node which knows it pulls again and puts the window in the
 * answer's 200: one request per window in steady state. A 200 without
 * `next` is followed by a plain pull; a 400 to an answer with `next`
 * (which leaves the lease valid) sends the answer again without it, and
 * when the node takes that, the worker stops asking (`answerNext` false).
 * A stopping worker asks for no next window.
 */
export class Worker {
  /** Whether answers ask for the next window; false once the node refused the field. */
  answerNext = true;
  private readonly o: Required<WorkerOptions>;
  private readonly stopping = new AbortController();
  private loops: Promise<void>[] = [];
  private readonly base: string;
  private readonly pullBody: { max_ids: number; wait: number };
  /** The windows whose handler runs, extended by one timer of the worker's (ticker). */
  private readonly held = new Set<Held>();
  private ticker?: Ticker;

  constructor(
    readonly client: Client,
    readonly queue: string,
    readonly handler: WindowHandler,
    opts: WorkerOptions = {},
  ) {
    this.o = {
      concurrency: 1, maxIds: 10, waitSeconds: 5, extendBy: 30, extendWhen: 10, retryPause: 1,
      log: (m) => console.warn(m),
      ...opts,
    };
    if (this.o.concurrency < 1) throw new Error("concurrency must be at least 1");
    this.base = `/api/v1/queues/${encodeURIComponent(queue)}/pull`;
    this.pullBody = { max_ids: this.o.maxIds, wait: this.o.waitSeconds };
  }

  private path(lease?: string, op?: string) {
    return lease === undefined ? this.base : `${this.base}/${encodeURIComponent(lease)}/${op}`;
  }

  /** Starts the loops. */
  start(): void {
    if (this.loops.length) throw new Error("worker already started");
    for (let i = 0; i < this.o.concurrency; i++) this.loops.push(this.loop());
  }

  /** Stops taking work; resolves true once every window held is answered, false at the timeout. */
  async stop(timeoutMs = 30_000): Promise<boolean> {
    this.stopping.abort();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs)));
    const done = Promise.all(this.loops).then(() => {
      clearInterval(this.ticker as unknown as number);
      this.ticker = undefined;
      return true;
    });
    try {
      return await Promise.race([done, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async loop(): Promise<void> {
    let w: Window | undefined; // a window the last answer brought
    while (w || !this.stopping.signal.aborted) {
      w ??= await this.pull();
      if (w) w = await this.handle(w);
    }
  }

  private async pull(): Promise<Window | undefined> {
    let r: { status: number; body: PullWindow | undefined };
    try {
      r = await this.client.request<PullWindow | undefined>("POST", this.base, this.pullBody,
        this.client.timeoutMs + this.o.waitSeconds * 1000);
    } catch (e) {
      this.o.log(`orderly: pull ${this.queue}: ${(e as Error).message}`);
      await sleep(this.o.retryPause * 1000, this.stopping.signal);
      return undefined;
    }
    if (r.status === 204 || !r.body) return undefined;
    return this.window(r.body);
  }

  private window(b: PullWindow): Window {
    return { queue: this.queue, lease: b.lease, deadline: b.deadline, jobs: b.jobs ?? [], lost: false };
  }

  /** Runs the handler on w and answers it; resolves to the next window the answer brought. */
  private async handle(w: Window): Promise<Window | undefined> {
    const h = this.hold(w);
    let answer: WebhookAnswer;
    try {
      const a = await this.handler(w);
      answer = a instanceof Answer ? a.toJSON() : a ?? {};
    } catch (e) {
      const msg = (e as Error)?.message || String(e);
      this.o.log(`orderly: handler of ${this.queue} failed: ${msg}`);
      answer = { failed: Object.fromEntries(w.jobs.map((j) => [j.id, msg])) };
    } finally {
      if (h) await this.release(h);
    }
    let r: PullAnswered | undefined;
    try {
      r = await this.answer(w, answer);
    } catch (e) {
      const reason = e instanceof OrderlyError ? ` (${String(e.body.reason ?? "")})` : "";
      this.o.log(`orderly: answer to lease ${w.lease} of ${this.queue}: ${(e as Error).message}${reason}; its ids go back to the queue`);
      return undefined;
    }
    if (r?.lost?.length) this.o.log(`orderly: lease ${w.lease} of ${this.queue}: nothing committed for ${r.lost.join(", ")} (their call ended first)`);
    return r?.next?.lease ? this.window(r.next) : undefined;
  }

  /** Posts the answer, asking for the next window unless stopping or refused before. */
  private async answer(w: Window, answer: WebhookAnswer): Promise<PullAnswered | undefined> {
    const path = this.path(w.lease, "answer");
    if (!this.answerNext || this.stopping.signal.aborted) return (await this.client.request<PullAnswered | undefined>("POST", path, answer)).body;
    let refused: OrderlyError;
    try {
      const r = await this.client.request<PullAnswered | undefined>("POST", path, { ...answer, next: this.pullBody }, this.client.timeoutMs + this.o.waitSeconds * 1000);
      return r.body;
    } catch (e) {
      if (!(e instanceof OrderlyError) || e.status !== 400) throw e;
      refused = e;
    }
    const r = await this.client.request<PullAnswered | undefined>("POST", path, answer);
    if (this.answerNext) {
      this.answerNext = false;
      this.o.log(`orderly: the node refused "next" in an answer (${refused.message}): plain pulls for ${this.queue} from now on`);
    }
    return r.body;
  }

  /** Puts w among the windows the ticker extends (none when extendBy is 0); one due already is extended at once. */
  private hold(w: Window): Held | undefined {
    if (this.o.extendBy <= 0) return undefined;
    const h: Held = { w, due: this.due(w), failed: false, busy: false, extending: undefined };
    this.held.add(h);
    if (this.held.size === 1) this.tickerFor().ref();
    if (h.due <= Date.now()) h.extending = this.extendOnce(h);
    return h;
  }

  /** Takes h from the ticker's windows once its handler is done, and waits for an extend under way. */
  private async release(h: Held): Promise<void> {
    this.held.delete(h);
    if (!this.held.size) this.ticker?.unref();
    if (h.extending) await h.extending;
  }

  /** When w is to be extended (ms): extendWhen seconds before its deadline. */
  private due(w: Window): number {
    return w.deadline * 1000 - this.o.extendWhen * 1000;
  }

  /**
   * The worker's one timer: every period (a quarter of extendWhen, between
   * 10 ms and 1 s) it extends the windows held that are due. Referenced
   * only while some window is held, as a timer per window was.
   */
  private tickerFor(): Ticker {
    if (!this.ticker) {
      const period = Math.min(1000, Math.max(10, (this.o.extendWhen * 1000) / 4));
      this.ticker = setInterval(() => this.tick(), period) as unknown as Ticker;
    }
    return this.ticker;
  }

  private tick(): void {
    const now = Date.now();
    for (const h of this.held) {
      if (h.busy || now < h.due) continue;
      if (h.failed && now >= h.w.deadline * 1000) {
        h.w.lost = true; // the deadline passed with no extend taken
        this.held.delete(h);
        continue;
      }
      h.extending = this.extendOnce(h);
    }
    if (!this.held.size) this.ticker?.unref();
  }

  /** One extend of h's lease; a refusal (409) loses it, another failure is tried again after retryPause. */
  private async extendOnce(h: Held): Promise<void> {
    const w = h.w;
    h.busy = true;
    try {
      const r = await this.client.request<{ deadline: number }>("POST", this.path(w.lease, "extend"), { by: this.o.extendBy });
      w.deadline = r.body.deadline;
      h.failed = false;
      h.due = this.due(w);
    } catch (e) {
      this.o.log(`orderly: extend of lease ${w.lease} of ${this.queue}: ${(e as Error).message}`);
      if (e instanceof OrderlyError && e.conflict) {
        w.lost = true;
        this.held.delete(h);
      } else {
        h.failed = true;
        h.due = Date.now() + Math.min(this.o.retryPause * 1000, Math.max(0, w.deadline * 1000 - Date.now()));
      }
    } finally {
      h.busy = false;
    }
  }
}

/** Node's interval handle. */
interface Ticker {
  ref(): void;
  unref(): void;
}

/** A window whose handler runs: when it is next extended (ms), whether its last extend failed, whether one is under way (and the last one). */
interface Held {
  w: Window;
  due: number;
  failed: boolean;
  busy: boolean;
  extending: Promise<void> | undefined;
}
