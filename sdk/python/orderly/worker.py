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
"""

from __future__ import annotations

import http.client
import logging
import threading
import time
import urllib.error
from dataclasses import dataclass
from typing import Callable, List, Optional

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
    (every id done); an exception fails every id of the window. While the
    handler runs, the deadline is extended by extend_by seconds whenever
    fewer than extend_when seconds are left (extend_by 0: never). Each
    answer asks for the next window (see the module's doc) unless the
    worker is stopping. stop() stops pulling, lets the windows held finish
    and be answered, within its timeout.
    """

    def __init__(self, client: Client, queue: str, handler: Handler, concurrency: int = 1,
                 max_ids: int = 10, wait: float = 5.0, extend_by: float = 30.0,
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

    def _path(self, *parts: str) -> str:
        return "/".join([f"/api/v1/queues/{Client._seg(self.queue)}/pull"] + [Client._seg(p) for p in parts])

    def start(self) -> None:
        """Starts the loops in background threads (stop() ends them)."""
        if self._threads:
            raise RuntimeError("worker already started")
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
        within wait; a window it brings is still handled and answered).
        """
        self._stopping.set()
        end = time.monotonic() + timeout
        done = True
        for t in self._threads:
            t.join(max(0.0, end - time.monotonic()))
            done = done and not t.is_alive()
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
            status, doc = self.client.request("POST", self._path(), {"max_ids": self.max_ids, "wait": self.wait},
                                              timeout=self.client.timeout + self.wait)
        except (OrderlyError, urllib.error.URLError, OSError, http.client.HTTPException) as e:
            self.log.warning("orderly: pull %s: %s", self.queue, e)
            self._stopping.wait(self.retry_pause)
            return None
        if status == 204 or not doc:
            return None
        return self._window(doc)

    def _window(self, doc) -> Window:
        return Window(self.queue, doc["lease"], float(doc["deadline"]),
                      [WebhookJob.from_json(j) for j in doc.get("jobs") or []])

    def _handle(self, w: Window) -> Optional[Window]:
        """Runs the handler on w and answers it; returns the next window the answer brought."""
        done = threading.Event()
        ext = threading.Thread(target=self._extend, args=(w, done), name=f"orderly-extend-{w.lease}", daemon=True)
        ext.start()
        try:
            answer = self.handler(w) or Answer()
        except Exception as e:  # every id failed
            self.log.warning("orderly: handler of %s failed: %s", self.queue, e)
            answer = Answer()
            for j in w.jobs:
                answer.fail(j.id, str(e) or type(e).__name__)
        finally:
            done.set()
            ext.join()
        try:
            doc = self._answer(w, answer.to_json())
        except Conflict as e:
            reason = e.body.get("reason", "") if isinstance(e.body, dict) else ""
            self.log.warning("orderly: answer to lease %s of %s refused (%s: %s); its ids go back to the queue",
                             w.lease, self.queue, e.message, reason)
            return None
        except (OrderlyError, urllib.error.URLError, OSError, http.client.HTTPException) as e:
            self.log.warning("orderly: answer to lease %s of %s: %s", w.lease, self.queue, e)
            return None
        doc = doc if isinstance(doc, dict) else {}
        if doc.get("lost"):
            self.log.warning("orderly: lease %s of %s: nothing committed for %s (their call ended first)",
                             w.lease, self.queue, doc["lost"])
        nxt = doc.get("next")
        return self._window(nxt) if isinstance(nxt, dict) and nxt.get("lease") else None

    def _answer(self, w: Window, body):
        """Posts the answer, asking for the next window unless stopping or refused before.

        A 400 to an answer with "next" leaves the lease valid: the answer
        goes again without it; when the node takes it then, the node does
        not know "next" (today's nodes refuse unknown members without naming
        them) and the worker stops asking.
        """
        path = self._path(w.lease, "answer")
        if not self.answer_next or self._stopping.is_set():
            return self.client.request("POST", path, body)[1]
        try:
            return self.client.request("POST", path, dict(body, next={"max_ids": self.max_ids, "wait": self.wait}),
                                       timeout=self.client.timeout + self.wait)[1]
        except OrderlyError as e:
            if e.status != 400:
                raise
            refused = e
        doc = self.client.request("POST", path, body)[1]
        if self.answer_next:
            self.answer_next = False
            self.log.info("orderly: the node refused \"next\" in an answer (%s): plain pulls for %s from now on",
                          refused.message, self.queue)
        return doc

    def _extend(self, w: Window, done: threading.Event) -> None:
        try:
            self._extend_until(w, done)
        finally:
            self.client._transport.release_local()  # for the next window's extension

    def _extend_until(self, w: Window, done: threading.Event) -> None:
        while not w.lost and self.extend_by > 0:
            left = w.deadline - time.time()
            if done.wait(max(0.0, left - self.extend_when)):
                return
            try:
                _, doc = self.client.request("POST", self._path(w.lease, "extend"), {"by": self.extend_by})
                w.deadline = float(doc["deadline"])
            except Conflict as e:
                self.log.warning("orderly: extend of lease %s of %s refused: %s", w.lease, self.queue, e)
                w.lost = True
            except (OrderlyError, urllib.error.URLError, OSError, http.client.HTTPException) as e:
                self.log.warning("orderly: extend of lease %s of %s: %s", w.lease, self.queue, e)
                if done.wait(min(self.retry_pause, max(0.0, w.deadline - time.time()))):
                    return
                if time.time() >= w.deadline:
                    w.lost = True

