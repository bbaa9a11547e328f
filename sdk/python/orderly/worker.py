"""The pull worker: long-polls a pull queue for windows of ids and answers them.

Protocol (issue 27): POST /api/v1/queues/{q}/pull {"max_ids", "wait"} answers
200 {"lease", "deadline", "jobs"} or 204; POST .../pull/{lease}/answer takes
the webhook answer's shape (ids not named succeeded) and answers 200 or 409
{"error", "reason"}; POST .../pull/{lease}/extend {"by"} answers 200
{"deadline"} or 409.

Answer with next: the worker adds "next": {"max_ids", "wait"} to each
answer, so that a node which knows it pulls again and puts the next window
in the answer's 200 ("next": {"lease", "deadline", "jobs"}): one request
per window in steady state. A 200 without "next" (nothing came within wait)
is followed by a plain pull; a node that refuses the field (a 400, which
leaves the lease valid) gets the answer again without it, and when it
takes that, plain pulls from then on.

Deadline extension: one thread per worker (orderly-extend-<queue>) keeps
the held windows in a heap by the time of their next extension and
extends each when fewer than extend_when seconds are left; no thread is
started per window.

The cost per window is kept low: the pull and "next" bodies are encoded
once, an answer's "next" is spliced into its encoded bytes, and a JSON
payload is encoded to bytes only when its data is read (Payload).
"""

from __future__ import annotations

import heapq
import http.client
import json
import logging
import re
import threading
import time
import urllib.error
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from .client import Client, Conflict, OrderlyError
from .webhook import Answer, WebhookJob

log = logging.getLogger("orderly.worker")


class LeaseLost(Exception):
    """The node no longer honours a lease (past its deadline, or the shard moved)."""


@dataclass
class Window:
    """A window of ids held under a lease until deadline (unix seconds)."""

    queue: str
    lease: str
    deadline: float
    jobs: List[WebhookJob]
    lost: bool = False  # an extend was refused: the answer will commit nothing


Handler = Callable[[Window], Optional[Answer]]


class Worker:
    """A pull-worker loop: concurrency windows at once, each given to handler.

    handler(window) returns an Answer (ids not named are done) or None
    (every id done); an exception fails every id of the window. A window
    holds at most max_ids ids (at least the queue's batch_size; 100 by
    default: fewer requests per job; take fewer when each job is slow, so
    that the ids wait under other workers' leases instead of one). While
    the handler runs, the deadline is extended by extend_by seconds
    whenever fewer than extend_when seconds are left (extend_by 0: never),
    by the worker's one extension thread. Each answer asks for the next
    window (see the module's doc) unless the worker is stopping. stop()
    stops pulling, lets the windows held finish and be answered, within
    its timeout.
    """

    def __init__(self, client: Client, queue: str, handler: Handler, concurrency: int = 1,
                 max_ids: int = 100, wait: float = 5.0, extend_by: float = 30.0,
                 extend_when: float = 10.0, retry_pause: float = 1.0,
                 logger: Optional[logging.Logger] = None):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.client = client
        self.queue = queue
        self.handler = handler
        self.concurrency = concurrency
        self.max_ids = max_ids
        self.wait = wait
        self.extend_by = extend_by
        self.extend_when = extend_when
        self.retry_pause = retry_pause
        self.log = logger or log
        # answer_next: whether answers ask for the next window; False once
        # the node refused the field.
        self.answer_next = True
        self._stopping = threading.Event()
        self._threads: List[threading.Thread] = []
        self._extender: Optional[_Extender] = None
        self._prepare()

    def _prepare(self) -> None:
        """The path and request bodies every pull and answer use (again at start,
        for a queue, max_ids or wait changed since)."""
        self._base = f"/api/v1/queues/{Client._seg(self.queue)}/pull"
        # Compact, as the node's fast path for an answer that is only "next" reads it.
        self._pull_body = json.dumps({"max_ids": self.max_ids, "wait": self.wait}, separators=_COMPACT).encode()
        self._next_member = b'"next":' + self._pull_body

    def _lease_path(self, lease: str, op: str) -> str:
        seg = lease if _PLAIN.fullmatch(lease) else urllib.parse.quote(lease, safe="")
        return f"{self._base}/{seg}/{op}"

    def start(self) -> None:
        """Starts the loops in background threads (stop() ends them)."""
        if self._threads:
            raise RuntimeError("worker already started")
        self._prepare()
        if self.extend_by > 0:
            self._extender = _Extender(self)
            self._extender.start()
        for i in range(self.concurrency):
            t = threading.Thread(target=self._loop, name=f"orderly-pull-{self.queue}-{i}", daemon=True)
            self._threads.append(t)
            t.start()

    def run(self, stop_timeout: float = 30.0) -> None:
        """Starts and blocks until stop() (from another thread or a signal handler) or Ctrl-C."""
        self.start()
        try:
            while not self._stopping.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        self.stop(stop_timeout)

    def stop(self, timeout: float = 30.0) -> bool:
        """Stops taking work and waits up to timeout for the windows held to be answered.

        Returns whether every loop ended in time (a long poll in flight ends
        within wait; a window it brings is still handled and answered). The
        extension thread ends once no window is held.
        """
        self._stopping.set()
        end = time.monotonic() + timeout
        done = True
        for t in self._threads:
            t.join(max(0.0, end - time.monotonic()))
            done = done and not t.is_alive()
        if self._extender is not None:
            self._extender.wake()
            self._extender.join(max(0.0, end - time.monotonic()))
            done = done and not self._extender.is_alive()
        return done

    def _loop(self) -> None:
        w: Optional[Window] = None  # a window the last answer brought
        try:
            while w is not None or not self._stopping.is_set():
                if w is None:
                    w = self._pull()
                    if w is None:
                        continue
                w = self._handle(w)
        finally:
            self.client._transport.close_local()  # the loop's kept-alive connection

    def _pull(self) -> Optional[Window]:
        try:
            status, doc = self.client._send("POST", self._base, self._pull_body, self.client.timeout + self.wait)
        except (OrderlyError, urllib.error.URLError, OSError, http.client.HTTPException) as e:
            self.log.warning("orderly: pull %s: %s", self.queue, e)
            self._stopping.wait(self.retry_pause)
            return None
        if status == 204 or not doc:
            return None
        return self._window(doc)

    def _window(self, doc) -> Window:
        return Window(self.queue, doc["lease"], float(doc["deadline"]),
                      [_job(j) for j in doc.get("jobs") or ()])

    def _handle(self, w: Window) -> Optional[Window]:
        """Runs the handler on w and answers it; returns the next window the answer brought."""
        ext = self._extender
        if ext is not None:
            ext.add(w)
        try:
            answer = self.handler(w)
        except Exception as e:  # every id failed
            self.log.warning("orderly: handler of %s failed: %s", self.queue, e)
            answer = Answer()
            for j in w.jobs:
                answer.fail(j.id, str(e) or type(e).__name__)
        finally:
            if ext is not None:
                ext.remove(w)  # after an extension in flight ends
        try:
            doc = self._answer(w, answer.to_json() if answer else None)
        except Conflict as e:
            reason = e.body.get("reason", "") if isinstance(e.body, dict) else ""
            self.log.warning("orderly: answer to lease %s of %s refused (%s: %s); its ids go back to the queue",
                             w.lease, self.queue, e.message, reason)
            return None
        except (OrderlyError, urllib.error.URLError, OSError, http.client.HTTPException) as e:
            self.log.warning("orderly: answer to lease %s of %s: %s", w.lease, self.queue, e)
            return None
        if not isinstance(doc, dict):
            return None
        if doc.get("lost"):
            self.log.warning("orderly: lease %s of %s: nothing committed for %s (their call ended first)",
                             w.lease, self.queue, doc["lost"])
        nxt = doc.get("next")
        return self._window(nxt) if isinstance(nxt, dict) and nxt.get("lease") else None

    def _answer(self, w: Window, body: Optional[dict]):
        """Posts the answer (None or {}: every id done), asking for the next
        window unless stopping or refused before.

        A 400 to an answer with "next" leaves the lease valid: the answer
        goes again without it; when the node takes it then, the node does
        not know "next" (today's nodes refuse unknown members without naming
        them) and the worker stops asking.
        """
        path = self._lease_path(w.lease, "answer")
        plain = json.dumps(body, separators=_COMPACT).encode() if body else b"{}"
        if not self.answer_next or self._stopping.is_set():
            return self.client._send("POST", path, plain)[1]
        # The "next" member spliced into the encoded answer: {"next":...} or {...,"next":...}.
        data = b"{" + self._next_member + b"}" if not body else plain[:-1] + b"," + self._next_member + b"}"
        try:
            return self.client._send("POST", path, data, self.client.timeout + self.wait)[1]
        except OrderlyError as e:
            if e.status != 400:
                raise
            refused = e
        doc = self.client._send("POST", path, plain)[1]
        if self.answer_next:
            self.answer_next = False
            self.log.info("orderly: the node refused \"next\" in an answer (%s): plain pulls for %s from now on",
                          refused.message, self.queue)
        return doc


_job = WebhookJob.from_json
_COMPACT = (",", ":")
_PLAIN = re.compile(r"[A-Za-z0-9_.~-]+")  # what quote leaves as it is


class _Extender(threading.Thread):
    """The worker's one extension thread: extends every held window whose
    deadline is fewer than extend_when seconds away, by extend_by.

    Windows wait in a heap by the unix time of their next extension (an
    entry whose window was removed, or rescheduled, is skipped when it comes
    up). A Condition wakes the thread for an earlier window and at stop; it
    ends once the worker is stopping and holds no window. One extension is
    in flight at a time, its timeout at most extend_when (at least 1 s);
    remove() waits for the one of its window to end, so that the answer
    goes after it (and sees w.lost). extend_by > 0 at start() starts it.
    """

    def __init__(self, worker: "Worker"):
        super().__init__(name=f"orderly-extend-{worker.queue}", daemon=True)
        self.w = worker
        self.cond = threading.Condition(threading.Lock())
        self.heap: List[Tuple[float, int, Window]] = []
        self.due: Dict[int, Tuple[float, int]] = {}  # id(window) -> (when, seq) of its live heap entry
        self.failed: Dict[int, bool] = {}  # id(window) -> its last extension failed
        self.seq = 0
        self.busy: Optional[Window] = None  # the window whose extension is in flight

    def add(self, win: Window) -> None:
        """Schedules win's extensions (a window the worker holds from now on)."""
        when = win.deadline - self.w.extend_when
        with self.cond:
            self.seq += 1
            self.due[id(win)] = (when, self.seq)
            if len(self.heap) > 2 * len(self.due) + 64:  # drop entries of removed windows
                self.heap = [e for e in self.heap if self.due.get(id(e[2])) == (e[0], e[1])]
                heapq.heapify(self.heap)
            heapq.heappush(self.heap, (when, self.seq, win))
            if self.heap[0][1] == self.seq:  # earlier than what the thread waits for
                self.cond.notify()

    def remove(self, win: Window) -> None:
        """Ends win's extensions, after the one in flight if any."""
        with self.cond:
            while self.busy is win:
                self.cond.wait()
            self.due.pop(id(win), None)
            self.failed.pop(id(win), None)
            if self.w._stopping.is_set() and not self.due:
                self.cond.notify()

    def wake(self) -> None:
        """Wakes the thread to see whether the worker stopped."""
        with self.cond:
            self.cond.notify()

    def run(self) -> None:
        try:
            while True:
                win = self._next()
                if win is None:
                    return
                self._extend(win)
        finally:
            self.w.client._transport.close_local()

    def _next(self) -> Optional[Window]:
        """Waits for the next window to extend, marks it busy; None once stopping with no window held."""
        with self.cond:
            self.busy = None
            self.cond.notify_all()  # a remove() waiting for the extension that ended
            while True:
                if self.w._stopping.is_set() and not self.due:
                    return None
                while self.heap and self.due.get(id(self.heap[0][2])) != self.heap[0][:2]:
                    heapq.heappop(self.heap)  # removed or rescheduled
                if not self.heap:
                    self.cond.wait()
                    continue
                left = self.heap[0][0] - time.time()
                if left > 0:
                    self.cond.wait(left)
                    continue
                win = heapq.heappop(self.heap)[2]
                self.busy = win
                return win

    def _extend(self, win: Window) -> None:
        """Extends win (busy) once and schedules its next extension, or drops it once lost."""
        w = self.w
        lost = False
        if self.failed.get(id(win)) and time.time() >= win.deadline:
            lost = True  # the deadline passed while extensions failed
        else:
            try:
                # Bounded by extend_when (at least a second): a hung extension
                # would hold back the other windows' past their deadlines.
                _, doc = w.client._send("POST", w._lease_path(win.lease, "extend"),
                                        json.dumps({"by": w.extend_by}).encode(),
                                        min(w.client.timeout, max(1.0, w.extend_when)))
                win.deadline = float(doc["deadline"])
                when = win.deadline - w.extend_when
                failed = False
            except Conflict as e:
                w.log.warning("orderly: extend of lease %s of %s refused: %s", win.lease, w.queue, e)
                lost = True
            except Exception as e:  # noqa: BLE001 (the node's or the network's: tried again)
                w.log.warning("orderly: extend of lease %s of %s: %s", win.lease, w.queue, e)
                now = time.time()
                when = now + min(w.retry_pause, max(0.0, win.deadline - now))
                failed = True
        with self.cond:
            if id(win) not in self.due:
                return
            if lost:
                win.lost = True
                del self.due[id(win)]
                self.failed.pop(id(win), None)
                return
            self.seq += 1
            self.due[id(win)] = (when, self.seq)
            self.failed[id(win)] = failed
            heapq.heappush(self.heap, (when, self.seq, win))
