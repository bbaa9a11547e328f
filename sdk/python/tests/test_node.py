"""Against a real node (started by sdk/sdk_test.go, which sets the environment).

ORDERLY_URL, ORDERLY_TOKEN: the node. ORDERLY_PREFIX: this language's queues
(<p>-plain, <p>-state, <p>-hook signed by Orderly's scheme with
ORDERLY_SECRET, <p>-std signed by Standard Webhooks with ORDERLY_STD_SECRET),
whose receivers listen on ORDERLY_HOOK_PORT and ORDERLY_STD_PORT, <p>-pull
served to pull workers, whose token is ORDERLY_WORKER_TOKEN, <p>-lease, a pull
queue with a 3 s lease). ORDERLY_PULL_NEXT: "1" when the node's pull answers
take "next", "0" when it refuses the field (the workers fall back).
"""

import json
import logging
import os
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from orderly import Answer, Client, Conflict, Job, Worker, receiver_handler  # noqa: E402

ENV = os.environ
WAIT = 30  # seconds to wait for a delivery before failing


@unittest.skipUnless(ENV.get("ORDERLY_URL"), "ORDERLY_URL not set: run by sdk/sdk_test.go")
class NodeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Client(ENV["ORDERLY_URL"], ENV["ORDERLY_TOKEN"])
        p = ENV["ORDERLY_PREFIX"]
        cls.plain, cls.state, cls.hook, cls.std = p + "-plain", p + "-state", p + "-hook", p + "-std"
        cls.pull = p + "-pull"
        cls.lease = p + "-lease"

    def test_auth(self):
        with self.assertRaises(Exception) as e:
            Client(ENV["ORDERLY_URL"], "wrong").enqueue(self.plain, [Job("x")])
        self.assertEqual(e.exception.status, 401)

    def test_enqueue_lookup_cancel(self):
        got = self.c.enqueue(self.plain, [Job("a", {"n": 1}, score=1, perform_in="1h", headers={"h": "v"}),
                                          Job("b", payload_bytes=b"\x00", perform_in=3600),
                                          {"id": "c", "payload": 1, "perform_at": time.time() + 3600}])
        self.assertEqual(got, {"enqueued": 3, "duplicates": 0})
        dup = [Job("d", 1, perform_in="1h", dedup_key="k")]
        self.assertEqual(self.c.enqueue(self.plain, dup)["duplicates"], 0)
        self.assertEqual(self.c.enqueue(self.plain, dup)["duplicates"], 1)
        found = self.c.job(self.plain, "a")
        self.assertEqual(found["queued"]["payloads"][0]["payload"], {"n": 1})
        self.assertEqual(found["queued"]["payloads"][0]["headers"], {"h": "v"})
        self.assertIsNone(self.c.job(self.plain, "nope"))
        self.assertEqual(self.c.cancel(self.plain, "a", "delete")["mode"], "delete")
        after = self.c.job(self.plain, "a")
        self.assertTrue(after is None or after["queued"] is None, after)

    def test_expiry_and_priority(self):
        at = round(time.time() + 3600, 3)
        self.c.enqueue(self.plain, [Job("e", 1, perform_in="1h", expires_at=at, priority=3),
                                    Job("f", 2, perform_in="1h", expires_in="2h")])
        e = self.c.job(self.plain, "e")["queued"]
        self.assertEqual(e["priority"], 3)
        self.assertAlmostEqual(e["payloads"][0]["expires_at"], at, places=3)
        f = self.c.job(self.plain, "f")["queued"]
        self.assertNotIn("priority", f)
        self.assertGreater(f["payloads"][0]["expires_at"], at)

    def test_pull_worker(self):
        # Four ids with five payloads each, queued before any worker runs;
        # three pull loops with the queue's worker token drain them. p1
        # fails once: its payloads come again. Per id: never two windows at
        # once, payloads in send order, every payload acknowledged.
        ids = ["p%d" % i for i in range(4)]
        self.c.enqueue(self.pull, [Job(i, {"n": n}) for i in ids for n in range(5)])
        lock = threading.Lock()
        held, overlaps, done, calls = set(), [], {}, []

        def handle(w):
            a = Answer()
            with lock:
                for j in w.jobs:
                    if j.id in held:
                        overlaps.append(j.id)
                    held.add(j.id)
            for j in w.jobs:
                ns = [json.loads(p.data)["n"] for p in j.payloads]
                with lock:
                    calls.append((j.id, ns))
                    if j.id == "p1" and j.retry_count < 0:
                        a.fail(j.id, "first try fails")
                    else:
                        done.setdefault(j.id, []).extend(ns)
            with lock:
                for j in w.jobs:
                    held.discard(j.id)
            return a

        worker_client = Client(ENV["ORDERLY_URL"], ENV["ORDERLY_WORKER_TOKEN"])
        w = Worker(worker_client, self.pull, handle, concurrency=3, max_ids=2, wait=1)
        w.start()
        try:
            end = time.time() + WAIT
            while time.time() < end:
                with lock:
                    if sum(len(v) for v in done.values()) >= 20:
                        break
                time.sleep(0.05)
        finally:
            self.assertTrue(w.stop(15), "the worker stopped")
        self.assertEqual(overlaps, [])
        self.assertEqual({i: done.get(i) for i in ids}, {i: [0, 1, 2, 3, 4] for i in ids})
        for i, ns in calls:
            self.assertEqual(ns, sorted(ns), i)
        self.assertEqual([ns for i, ns in calls if i == "p1"], [[0, 1, 2, 3, 4]] * 2, "p1 failed once, then came whole")
        self.assertEqual(w.answer_next, ENV["ORDERLY_PULL_NEXT"] == "1",
                         "answers take the next window where the node knows next; plain pulls otherwise")
        # A kept-alive connection per loop, and its extension thread's (the
        # lease, 5 s, is below extend_when: each window extends).
        self.assertLessEqual(worker_client._transport.connects, 6, "kept-alive connections")
        # The worker token opens the pull routes of its queue only.
        with self.assertRaises(Exception) as e:
            worker_client.enqueue(self.plain, [Job("x")])
        self.assertEqual(e.exception.status, 403)

    def _lease_run(self, id, **opts):
        """Runs a worker on the lease queue whose handler outlives the first
        window's lease; returns the windows seen as (retry_count, deadline
        first seen, deadline at the end), the warnings, and whether the id
        is gone from the queue at the end."""
        self.c.enqueue(self.lease, [Job(id, {"n": 1})])
        seen, warnings = [], []
        lock = threading.Lock()

        class Collect(logging.Handler):
            def emit(self, record):
                warnings.append(record.getMessage())

        logger = logging.getLogger("orderly.test." + id)
        logger.propagate = False
        logger.addHandler(Collect(logging.WARNING))

        def handle(w):
            first = w.deadline
            with lock:
                n = len(seen)
            if n == 0:  # outlive the lease as first granted
                while time.time() < first + 1.5:
                    time.sleep(0.05)
            with lock:
                seen.append((w.jobs[0].retry_count, first, w.deadline))

        w = Worker(self.c, self.lease, handle, wait=1, logger=logger, **opts)
        w.start()
        gone = False
        try:
            end = time.time() + WAIT
            while time.time() < end and not gone:
                time.sleep(0.1)
                with lock:
                    if not seen:
                        continue
                j = self.c.job(self.lease, id)
                gone = j is None or (j["queued"] is None and not j["in_flight"])
        finally:
            self.assertTrue(w.stop(15), "the worker stopped")
        return seen, warnings, gone

    def test_a_lease_ends_without_extension(self):
        seen, warnings, gone = self._lease_run("slow-no-extend", extend_by=0)
        self.assertTrue(gone, "the id came again and was acknowledged")
        self.assertEqual([s[0] for s in seen], [-1, 0], "the late answer committed nothing: the id failed once")
        self.assertEqual(seen[0][1], seen[0][2], "no extension")
        self.assertTrue(any("refused" in m for m in warnings), warnings)

    def test_extension_keeps_the_lease(self):
        seen, warnings, gone = self._lease_run("slow-extended", extend_by=3, extend_when=2)
        self.assertTrue(gone, "the answer committed")
        self.assertEqual(len(seen), 1, "delivered once")
        self.assertGreater(seen[0][2], seen[0][1], "the deadline moved")
        self.assertEqual(warnings, [])

    def test_state_cas_and_feed(self):
        st = self.c.get_state(self.state, "acc")
        self.assertEqual((st.value, st.version), (None, 0))
        v = self.c.set_state(self.state, "acc", {"n": 1}, 0)
        with self.assertRaises(Conflict):
            self.c.set_state(self.state, "acc", {"n": 2}, 0)
        v2 = self.c.set_state(self.state, "acc", {"n": 2}, v)
        st = self.c.get_state(self.state, "acc")
        self.assertEqual((st.value, st.version), ({"n": 2}, v2))
        page = self.c.feed(self.state, "0")
        self.assertEqual([(e.id, e.version, e.state) for e in page.entries], [("acc", v, {"n": 1}), ("acc", v2, {"n": 2})])
        self.c.set_state(self.state, "acc", None, v2)  # deletes
        more = self.c.feed(self.state, page.next, wait=5)
        self.assertEqual([(e.id, e.deleted) for e in more.entries], [("acc", True)])

    def _receiver(self, port, secret, seen):
        def handle(d):
            seen.append(d)
            a = Answer()
            for j in d.jobs:
                a.set_state(j.id, {"got": j.payloads[-1].json(), "delivery": d.name})
            return a
        srv = ThreadingHTTPServer(("127.0.0.1", port), receiver_handler(handle, secret))
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        self.addCleanup(lambda: (srv.shutdown(), srv.server_close(), t.join()))

    def _deliveries(self, queue, port, secret):
        seen = []
        self._receiver(port, secret, seen)
        # A forged request is refused.
        req = urllib.request.Request(f"http://127.0.0.1:{port}/", data=b'{"queue":"q","shard":0,"jobs":[]}',
                                     headers={"Orderly-Signature": "t=1,v1=" + "0" * 64}, method="POST")
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=5)
        self.assertEqual(e.exception.code, 401)
        self.c.enqueue(queue, [Job("w1", {"k": "v"})])
        end = time.monotonic() + WAIT
        while time.monotonic() < end:
            st = self.c.get_state(queue, "w1")
            if st.value is not None:
                break
            time.sleep(0.05)
        self.assertEqual(st.value["got"], {"k": "v"}, "the receiver's answer committed the state")
        self.assertTrue(st.value["delivery"].startswith(queue + "/"), st.value)
        self.assertEqual([j.id for j in seen[0].jobs], ["w1"])
        self.assertEqual(seen[0].queue, queue)

    def test_signed_deliveries_orderly_scheme(self):
        self._deliveries(self.hook, int(ENV["ORDERLY_HOOK_PORT"]), ENV["ORDERLY_SECRET"])

    def test_signed_deliveries_standard_webhooks(self):
        self._deliveries(self.std, int(ENV["ORDERLY_STD_PORT"]), ENV["ORDERLY_STD_SECRET"])


if __name__ == "__main__":
    unittest.main()
