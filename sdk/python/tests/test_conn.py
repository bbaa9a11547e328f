"""Kept-alive connections of the client, against fake servers that count them.

FakeNode is a raw HTTP/1.1 server driven by a script: for each request it
says what the server does (answer and keep the connection, answer with
"Connection: close", answer and then close or reset the connection, read
the request and close without answering, hold it). It records each
request with the number of the connection it came on.
"""

import http.client
import json
import os
import socket
import struct
import sys
import threading
import unittest
import urllib.error

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from orderly import Client, Job, OrderlyError, Worker  # noqa: E402

WAIT = 10  # seconds any test waits for an event before failing (not a timing assert)


class FakeNode:
    """script(conn, method, path) -> an action tuple, called for each request:
    ("answer", status, doc[, headers]), ("answer-close", ...) answers then
    closes, ("answer-reset", ...) answers then resets (RST), ("drop",) closes
    without answering, ("hold", event) waits for event, then closes."""

    def __init__(self, script):
        self.script = script
        self.lock = threading.Lock()
        self.requests = []  # (conn, method, path)
        self.conns = 0
        self.closed = []  # connections the server closed or reset
        self.ln = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.ln.getsockname()[1]}"
        self.socks = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.ln.close()
        for s in self.socks:
            try:
                s.close()
            except OSError:
                pass

    def _accept(self):
        while True:
            try:
                s, _ = self.ln.accept()
            except OSError:
                return
            with self.lock:
                self.conns += 1
                n = self.conns
                self.socks.append(s)
            threading.Thread(target=self._serve, args=(s, n), daemon=True).start()

    def _serve(self, s, n):
        f = s.makefile("rb")
        try:
            while True:
                line = f.readline()
                if not line:
                    return
                method, path, _ = line.decode().split(" ", 2)
                length = 0
                while True:
                    h = f.readline().decode().strip()
                    if not h:
                        break
                    k, v = h.split(":", 1)
                    if k.lower() == "content-length":
                        length = int(v)
                    if k.lower() == "authorization":
                        assert v.strip() == "Bearer tok", v
                f.read(length)
                with self.lock:
                    self.requests.append((n, method, path))
                act = self.script(n, method, path)
                if act[0] in ("drop", "hold"):
                    if act[0] == "hold":
                        act[1].wait(WAIT)
                    self._closed(s, n)
                    return
                status, doc = act[1], act[2]
                headers = act[3] if len(act) > 3 else {}
                body = b"" if doc is None else json.dumps(doc).encode()
                out = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}"]
                out += [f"{k}: {v}" for k, v in headers.items()]
                s.sendall(("\r\n".join(out) + "\r\n\r\n").encode() + body)
                if act[0] == "answer-reset":
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                if act[0] in ("answer-close", "answer-reset"):
                    self._closed(s, n)
                    return
        except OSError:
            return

    def _closed(self, s, n):
        s.close()
        with self.lock:
            self.closed.append(n)

    def on_conns(self):
        with self.lock:
            return [n for n, _, _ in self.requests]


def ok(*_):
    return ("answer", 200, {"enqueued": 1, "duplicates": 0})


def pull_path(q="q"):
    return f"/api/v1/queues/{q}/pull"


def wait_readable(client):
    """Waits until the calling thread's kept connection has the peer's close to read."""
    import select
    sock = client._transport._local.held.conn.sock
    assert select.select([sock], [], [], WAIT)[0], "the server's close did not arrive"


def skip_idle_check(client):
    """Makes the idle check of this thread's connection see nothing, as when
    the node closes it between the check and the request (the race)."""
    class Blind:
        def poll(self, *_):
            return []
    client._transport._local.held.poller = Blind()


class ReuseTest(unittest.TestCase):
    def fake(self, script=ok):
        f = FakeNode(script)
        self.addCleanup(f.close)
        c = Client(f.url, "tok")
        self.addCleanup(c.close)
        return f, c

    def test_one_connection_per_thread(self):
        f, c = self.fake()
        errors = []

        def run():
            try:
                for i in range(50):
                    c.enqueue("q", [Job(f"id{i}")])
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
        self.assertEqual(errors, [])
        self.assertEqual(len(f.requests), 200)
        self.assertEqual(f.conns, 4, "one connection per thread")
        self.assertEqual(c._transport.connects, 4)

    def test_worker_loops_keep_their_connections(self):
        lock = threading.Lock()
        state = {"left": 60, "handed": 0}

        def script(n, method, path):
            with lock:
                if path.endswith("/answer") or path == pull_path():
                    if state["left"] > 0:
                        state["left"] -= 1
                        state["handed"] += 1
                        w = {"lease": f"L{state['handed']}", "deadline": 4e9,
                             "jobs": [{"id": f"i{state['handed']}", "retry_count": -1, "perform_at": 1,
                                       "payloads": [{"payload": 1, "score": 1}]}]}
                        if path == pull_path():
                            return ("answer", 200, w)
                        return ("answer", 200, {"accepted": True, "next": w})
                    return ("answer", 200, {"accepted": True}) if path.endswith("/answer") else ("answer", 204, None)
            return ("answer", 404, {"error": "no"})

        f, c = self.fake(script)
        got = []
        done = threading.Event()

        def handle(w):
            with lock:
                got.append(w.lease)
                if len(got) == 60:
                    done.set()

        wk = Worker(c, "q", handle, concurrency=3, wait=0.05)
        wk.start()
        self.assertTrue(done.wait(WAIT))
        self.assertTrue(wk.stop(WAIT))
        self.assertEqual(len(set(got)), 60)
        self.assertGreater(len(f.requests), 60)
        self.assertEqual(f.conns, 3, "one connection per loop")

    def test_extensions_share_a_connection(self):
        # Each window's deadline is near: the worker's extension thread
        # extends it at once, every window on that thread's one connection.
        lock = threading.Lock()
        state = {"handed": 0, "extended": set()}
        extended = threading.Condition(lock)

        def script(n, method, path):
            with lock:
                if path.endswith("/extend"):
                    state["extended"].add(path.split("/")[-2])
                    extended.notify_all()
                    return ("answer", 200, {"deadline": 4e9})
                if path.endswith("/answer"):
                    return ("answer", 200, {"accepted": True})
                if state["handed"] < 10:
                    state["handed"] += 1
                    return ("answer", 200, {"lease": f"L{state['handed']}", "deadline": 1, "jobs": [
                        {"id": "a", "retry_count": -1, "perform_at": 1, "payloads": [{"payload": 1, "score": 1}]}]})
                return ("answer", 204, None)

        f, c = self.fake(script)
        seen = []

        def handle(w):
            with lock:
                self.assertTrue(extended.wait_for(lambda: w.lease in state["extended"], WAIT))
                seen.append(w.lease)
                extended.notify_all()

        wk = Worker(c, "q", handle, wait=0.05, extend_by=30, extend_when=5)
        wk.start()
        with lock:
            extended.wait_for(lambda: len(seen) >= 10, WAIT)
        self.assertTrue(wk.stop(WAIT))
        self.assertEqual(len(seen), 10)
        self.assertEqual(f.conns, 2, "the loop's connection and one the extensions share")

    def test_connection_close_is_honoured(self):
        # The server answers "Connection: close" and keeps the socket open;
        # a request sent on it anyway would get a 500.
        def script(n, method, path):
            if n == 1 and len(f.on_conns()) == 1:
                return ("answer", 401, {"error": "bad token"}, {"Connection": "close"})
            if n == 1:
                return ("answer", 500, {"error": "sent on a closed connection"})
            return ok()

        f, c = self.fake(script)
        with self.assertRaises(OrderlyError) as e:
            c.enqueue("q", [Job("a")])
        self.assertEqual(e.exception.status, 401)
        self.assertEqual(c.enqueue("q", [Job("b")]), {"enqueued": 1, "duplicates": 0})
        self.assertEqual(f.on_conns(), [1, 2])

    def test_idle_connection_closed_by_the_server(self):
        # The node closed the idle connection before the next request: the
        # check before reuse sees it, the request goes once, on a new one.
        for reset in (False, True):
            with self.subTest(reset=reset):
                f, c = self.fake(lambda n, m, p: ("answer-reset" if reset else "answer-close", 200, {"n": 1}) if n == 1 else ok())
                c.enqueue("q", [Job("a")])
                wait_readable(c)
                self.assertEqual(c.enqueue("q", [Job("b")])["enqueued"], 1)
                self.assertEqual(f.on_conns(), [1, 2], "sent once, on a new connection")

    def test_closed_while_sending_goes_again(self):
        # The reset reached the connection after the check: the send fails,
        # the node got no request; even an enqueue goes again.
        f, c = self.fake(lambda n, m, p: ("answer-reset", 200, {"n": 1}) if n == 1 else ok())
        c.enqueue("q", [Job("a")])
        wait_readable(c)
        skip_idle_check(c)
        self.assertEqual(c.enqueue("q", [Job("b")])["enqueued"], 1)
        self.assertEqual(f.on_conns(), [1, 2])
        self.assertEqual(c._transport.connects, 2)

    def test_closed_after_the_request_went(self):
        # The node read the request and closed without a byte of answer, on
        # a reused connection: a pull, an answer, an extend and a GET go
        # once more, on a new connection; an enqueue, a state PUT and a
        # cancel do not (the first may have been done).
        def script(n, method, path):
            if n == 1 and len(f.on_conns()) == 2:
                return ("drop",)
            return ("answer", 200, {"accepted": True, "deadline": 1, "version": 1, "enqueued": 1})

        routes = [
            (True, lambda c: c.request("POST", pull_path(), {"max_ids": 1, "wait": 0})),
            (True, lambda c: c.request("POST", pull_path() + "/L1/answer", {})),
            (True, lambda c: c.request("POST", pull_path() + "/L1/extend", {"by": 5})),
            (True, lambda c: c.job("q", "a")),
            (False, lambda c: c.enqueue("q", [Job("a")])),
            (False, lambda c: c.set_state("q", "a", 1, 0)),
            (False, lambda c: c.cancel("q", "a")),
        ]
        for i, (again, call) in enumerate(routes):
            with self.subTest(route=i):
                f, c = self.fake(script)
                c.job("q", "first")
                if again:
                    call(c)
                    self.assertEqual(f.on_conns(), [1, 1, 2], "sent once more on a new connection")
                else:
                    with self.assertRaises(ConnectionError):
                        call(c)
                    self.assertEqual(f.on_conns(), [1, 1], "sent once")

    def test_a_fresh_connection_is_never_retried(self):
        f, c = self.fake(lambda n, m, p: ("drop",))
        with self.assertRaises(ConnectionError):
            c.request("POST", pull_path(), {"max_ids": 1, "wait": 0})
        self.assertEqual(f.on_conns(), [1])

    def test_timeout_on_a_reused_connection(self):
        # A request's timeout holds on a reused connection (a longer one
        # before it); a timed-out request is not sent again; the next one
        # takes a new connection.
        release = threading.Event()
        self.addCleanup(release.set)

        def script(n, method, path):
            if n == 1 and len(f.on_conns()) == 2:
                return ("hold", release)
            return ok()

        f, c = self.fake(script)
        c.request("GET", "/api/v1/queues/q/jobs/a", timeout=30)
        with self.assertRaises(TimeoutError):
            c.request("GET", "/api/v1/queues/q/jobs/b", timeout=0.2)
        release.set()
        self.assertEqual(c.enqueue("q", [Job("c")])["enqueued"], 1)
        self.assertEqual(f.on_conns(), [1, 1, 2])

    def test_connect_failure_is_a_url_error(self):
        ln = socket.create_server(("127.0.0.1", 0))
        port = ln.getsockname()[1]
        ln.close()
        with self.assertRaises(urllib.error.URLError):
            Client(f"http://127.0.0.1:{port}", "tok").enqueue("q", [Job("a")])

    def test_a_thread_that_ends_closes_its_connection(self):
        f, c = self.fake()
        t = threading.Thread(target=lambda: c.enqueue("q", [Job("a")]))
        t.start()
        t.join(WAIT)
        with f.lock:
            s = f.socks[0]
        s.settimeout(WAIT)
        self.assertEqual(s.recv(1), b"", "the client closed it")

    def test_path_prefix(self):
        f, _ = self.fake()
        c = Client(f.url + "/orderly/", "tok")
        self.addCleanup(c.close)
        c.enqueue("q", [Job("a")])
        self.assertEqual(f.requests[0][2], "/orderly/api/v1/queues/q/jobs")

    def test_a_target_with_a_space_is_refused(self):
        # Refused before a connection is opened (or spoiled mid-request).
        f, c = self.fake()
        with self.assertRaises(http.client.InvalidURL):
            c.request("GET", "/a b")
        self.assertEqual(c.enqueue("q", [Job("a")])["enqueued"], 1)
        self.assertEqual(f.on_conns(), [1])


class OneSendTest(unittest.TestCase):
    def test_headers_and_body_go_in_one_send(self):
        from orderly._conn import _HTTPConnection

        class Sock:
            def __init__(self):
                self.sent = []

            def sendall(self, data):
                self.sent.append(bytes(data))

        for body in (b'{"a":1}', None):
            with self.subTest(body=body):
                conn = _HTTPConnection("127.0.0.1", 9)
                conn.sock = sock = Sock()
                conn.request("POST", "/x", body=body, headers={"Content-Type": "application/json"})
                self.assertEqual(len(sock.sent), 1, sock.sent)
                self.assertTrue(sock.sent[0].startswith(b"POST /x HTTP/1.1\r\n"))
                self.assertTrue(sock.sent[0].endswith(b"\r\n\r\n" + (body or b"")))


if __name__ == "__main__":
    unittest.main()
