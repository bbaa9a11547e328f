"""The pull-worker loop against an in-process fake of the pull routes.

The fake answers the shapes of docs/contract.md §6.6 (pull 200/204, answer
200/409, extend 200/409). An answer's "next" is served (next="serve": the
next window in the 200, as a node that knows it does) or refused with a 400
that does not name it (next="refuse", as today's nodes do).
"""

import json
import os
import sys
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from orderly import Answer, Client, Worker  # noqa: E402

WAIT = 10  # seconds any test waits for an event before failing (not a timing assert)


class FakePull:
    """Hands out the windows queued in it, records answers and extends."""

    def __init__(self, deadline_in=60.0, next="refuse"):
        self.lock = threading.Lock()
        self.windows = []  # (lease, jobs) still to hand out
        self.answers = {}  # lease -> answer body
        self.extends = []  # (lease, by)
        self.lost = set()  # leases answered with 409
        self.pulls = 0
        self.next = next
        self.asked_next = {}  # lease -> the "next" its answer asked for (None: none)
        self.via = {}  # lease -> "pull" or "next": how it was handed out
        self.refusals = 0  # answers refused for their "next"
        self.deadline_in = deadline_in
        self.answered = threading.Condition(self.lock)
        self.extended = threading.Event()
        fake = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def send(self, status, doc=None):
                body = b"" if doc is None else json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                assert self.headers["Authorization"] == "Bearer tok"
                parts = self.path.split("/")  # /api/v1/queues/q/pull[/lease/op]
                with fake.lock:
                    answered = False
                    if len(parts) == 6:
                        assert set(body) == {"max_ids", "wait"}, body
                        fake.pulls += 1
                        if not fake.windows:
                            wait = min(body["wait"], 0.05)
                        else:
                            return self.send(200, fake.hand_out("pull"))
                    else:
                        lease, op = parts[6], parts[7]
                        if op == "extend":
                            fake.extends.append((lease, body["by"]))
                            fake.extended.set()
                            if lease in fake.lost:
                                return self.send(409, {"error": "lease lost", "reason": "deadline"})
                            return self.send(200, {"deadline": time.time() + body["by"]})
                        nxt = body.pop("next", None)
                        if nxt is not None and fake.next == "refuse":
                            fake.refusals += 1
                            return self.send(400, {"error": "the answer must be empty, {} or a webhook answer"})
                        fake.answers[lease] = body
                        fake.asked_next[lease] = nxt
                        fake.answered.notify_all()
                        if lease in fake.lost:
                            return self.send(409, {"error": "lease lost", "reason": "deadline"})
                        if nxt is None:
                            return self.send(200, {"accepted": True})
                        assert set(nxt) == {"max_ids", "wait"}, nxt
                        if fake.windows:
                            return self.send(200, {"accepted": True, "next": fake.hand_out("next")})
                        wait = min(nxt["wait"], 0.05)
                        answered = True
                time.sleep(wait)
                self.send(200, {"accepted": True}) if answered else self.send(204)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def hand_out(self, via):
        """The next window, handed out by a pull or an answer's next (under lock)."""
        lease, jobs = self.windows.pop(0)
        self.via[lease] = via
        return {"lease": lease, "deadline": time.time() + self.deadline_in, "jobs": jobs}

    def add(self, lease, *ids):
        with self.lock:
            self.windows.append((lease, [{"id": i, "retry_count": -1, "perform_at": 1,
                                          "payloads": [{"payload": {"n": i}, "score": 1}]} for i in ids]))

    def wait_answers(self, n):
        with self.lock:
            ok = self.answered.wait_for(lambda: len(self.answers) >= n, WAIT)
            assert ok, f"{len(self.answers)} answers of {n}"
            return dict(self.answers)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class WorkerTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakePull()
        self.client = Client(self.fake.url, "tok")
        self.addCleanup(self.fake.close)

    def test_answers_each_window(self):
        self.fake.add("L1", "a", "b")
        self.fake.add("L2", "c")
        self.fake.add("L3", "d")

        def handle(w):
            if w.lease == "L1":
                return Answer().fail("a", "boom").set_state("b", {"n": 1})
            if w.lease == "L3":
                raise RuntimeError("broken")
            return None

        wk = Worker(self.client, "q", handle, concurrency=2, wait=1)
        wk.start()
        got = self.fake.wait_answers(3)
        self.assertTrue(wk.stop(WAIT))
        self.assertEqual(got["L1"], {"failed": {"a": "boom"}, "state": {"b": {"n": 1}}})
        self.assertEqual(got["L2"], {}, "{} acknowledges every id")
        self.assertEqual(got["L3"], {"failed": {"d": "broken"}}, "an exception fails every id")

    def test_concurrency(self):
        for i in range(3):
            self.fake.add(f"L{i}", f"id{i}")
        barrier = threading.Barrier(3, timeout=WAIT)
        wk = Worker(self.client, "q", lambda w: barrier.wait() and None, concurrency=3, wait=1)
        wk.start()
        self.fake.wait_answers(3)  # only if three windows were held at once
        self.assertTrue(wk.stop(WAIT))

    def test_extends_while_the_handler_runs(self):
        self.fake.deadline_in = 0.2  # less than extend_when: extended at once
        self.fake.add("L1", "a")
        wk = Worker(self.client, "q", lambda w: self.assertTrue(self.fake.extended.wait(WAIT)),
                    wait=1, extend_by=30, extend_when=5)
        wk.start()
        got = self.fake.wait_answers(1)
        self.assertTrue(wk.stop(WAIT))
        self.assertEqual(got["L1"], {})
        self.assertEqual(self.fake.extends[0], ("L1", 30))

    def test_one_extension_thread_for_every_window(self):
        # Short leases (extend_when above the lease): each window is extended
        # at once and again whenever it nears its new deadline, by the
        # worker's one extension thread: no thread is started per window.
        self.fake.deadline_in = 0.1
        for i in range(6):
            self.fake.add(f"L{i}", f"id{i}")
        before = set(threading.enumerate())
        seen = set()  # the threads alive while a handler ran, beyond those of before
        lock = threading.Lock()

        def extended(lease):
            with self.fake.lock:
                return sum(1 for e in self.fake.extends if e[0] == lease)

        def handle(w):
            end = time.monotonic() + WAIT
            while extended(w.lease) < 3 and time.monotonic() < end:
                time.sleep(0.01)
            with lock:
                seen.update(t for t in threading.enumerate() if t not in before)

        wk = Worker(self.client, "q", handle, concurrency=2, wait=0.05, extend_by=0.3, extend_when=0.25)
        wk.start()
        self.fake.wait_answers(6)
        self.assertTrue(wk.stop(WAIT))
        for i in range(6):
            self.assertGreaterEqual(extended(f"L{i}"), 3, f"L{i} extended again and again while held")
        names = sorted(t.name for t in seen if t.name.startswith("orderly-"))
        self.assertEqual(names, ["orderly-extend-q", "orderly-pull-q-0", "orderly-pull-q-1"],
                         "two loops and one extension thread, whatever the windows")
        self.assertFalse(any(t.is_alive() for t in seen if t.name.startswith("orderly-")),
                         "stop ends the loops and the extension thread")

    def test_a_refused_extension_marks_the_window_lost(self):
        self.fake.deadline_in = 0.1
        self.fake.lost.add("L1")
        self.fake.add("L1", "a")
        lost = []

        def handle(w):
            end = time.monotonic() + WAIT
            while not w.lost and time.monotonic() < end:
                time.sleep(0.01)
            lost.append(w.lost)

        wk = Worker(self.client, "q", handle, wait=0.05, extend_by=30, extend_when=5)
        with self.assertLogs("orderly.worker", "WARNING"):
            wk.start()
            self.fake.wait_answers(1)
            self.assertTrue(wk.stop(WAIT))
        self.assertEqual(lost, [True])
        self.assertEqual(self.fake.extends, [("L1", 30)], "no extension after the refusal")

    def test_a_lost_lease_is_logged_and_dropped(self):
        self.fake.lost.add("L1")
        self.fake.add("L1", "a")
        self.fake.add("L2", "b")
        wk = Worker(self.client, "q", lambda w: None, wait=1)
        with self.assertLogs("orderly.worker", "WARNING") as logs:
            wk.start()
            got = self.fake.wait_answers(2)
            self.assertTrue(wk.stop(WAIT))
        self.assertEqual(set(got), {"L1", "L2"}, "the worker went on after the 409")
        self.assertIn("deadline", "\n".join(logs.output))

    def serving_fake(self):
        fake = FakePull(next="serve")
        self.addCleanup(fake.close)
        return fake, Client(fake.url, "tok")

    def test_answer_brings_the_next_window(self):
        fake, client = self.serving_fake()
        for i in range(1, 4):
            fake.add(f"L{i}", f"id{i}")
        wk = Worker(client, "q", lambda w: None, max_ids=3, wait=1)
        wk.start()
        fake.wait_answers(3)
        fake.add("L4", "id4")  # after an answer whose 200 had no next: a plain pull takes it
        got = fake.wait_answers(4)
        self.assertTrue(wk.stop(WAIT))
        self.assertEqual(got, {"L1": {}, "L2": {}, "L3": {}, "L4": {}})
        self.assertEqual(fake.via, {"L1": "pull", "L2": "next", "L3": "next", "L4": "pull"}, "one request per window")
        self.assertEqual(fake.asked_next["L1"], {"max_ids": 3, "wait": 1})
        self.assertTrue(wk.answer_next)

    def test_a_refused_next_falls_back_to_pulls_once(self):
        for i in range(1, 4):
            self.fake.add(f"L{i}", f"id{i}")
        wk = Worker(self.client, "q", lambda w: Answer().set_result(w.jobs[0].id, "r"), wait=1)
        wk.start()
        got = self.fake.wait_answers(3)
        self.assertTrue(wk.stop(WAIT))
        self.assertEqual(got["L1"], {"result": {"id1": "r"}}, "the answer went again without next")
        self.assertEqual(self.fake.refusals, 1, "refused once, then remembered")
        self.assertEqual(self.fake.via, {"L1": "pull", "L2": "pull", "L3": "pull"})
        self.assertEqual(set(self.fake.asked_next.values()), {None})
        self.assertFalse(wk.answer_next)

    def test_graceful_stop_takes_no_next_window(self):
        fake, client = self.serving_fake()
        fake.add("L1", "a")
        held, release = threading.Event(), threading.Event()

        def handle(w):
            held.set()
            release.wait(WAIT)

        wk = Worker(client, "q", handle, wait=1)
        wk.start()
        self.assertTrue(held.wait(WAIT))
        fake.add("L2", "b")
        stopped = []
        t = threading.Thread(target=lambda: stopped.append(wk.stop(WAIT)))
        t.start()
        while not wk._stopping.is_set():
            time.sleep(0.01)
        release.set()
        t.join()
        self.assertEqual(stopped, [True])
        self.assertEqual(fake.answers, {"L1": {}})
        self.assertIsNone(fake.asked_next["L1"], "a stopping worker asks for no next window")
        self.assertNotIn("L2", fake.via)

    def test_graceful_stop_answers_what_it_holds(self):
        self.fake.add("L1", "a")
        held, release = threading.Event(), threading.Event()

        def handle(w):
            held.set()
            release.wait(WAIT)
            return Answer().set_result("a", "late")

        wk = Worker(self.client, "q", handle, wait=0.1)
        wk.start()
        self.assertTrue(held.wait(WAIT))
        stopped = []
        t = threading.Thread(target=lambda: stopped.append(wk.stop(WAIT)))
        t.start()
        with self.fake.lock:
            pulls = self.fake.pulls
        release.set()
        t.join()
        self.assertEqual(stopped, [True])
        self.assertEqual(self.fake.answers["L1"], {"result": {"a": "late"}})
        self.assertEqual(self.fake.pulls, pulls, "no pull after stop")


if __name__ == "__main__":
    unittest.main()
