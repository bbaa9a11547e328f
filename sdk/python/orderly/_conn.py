"""Kept-alive HTTP connections to a node: one per thread, reused request after request.

Each thread (a worker loop, the worker's extension thread, a caller's
thread) has an http.client connection of its own to the node, opened at
its first request and kept while the node keeps it: an answer with
"Connection: close" (the node closes after some refusals, 401 or 413) or
from an HTTP/1.0 peer is read and the connection closed (http.client does
that); the next request opens another. A thread that ends has its
connection closed.

A request is one HTTPConnection.request call with the body already encoded
and the caller's header dict, built once (Client._headers); its headers
and body go in one send (_OneSend). The exchange is http.client's, with
its exceptions (RemoteDisconnected, IncompleteRead, InvalidURL, ...): the
SDK parses no HTTP of its own.

A kept-alive connection can be found closed by the node (its idle timeout,
120 s by default, or a restart). Before a connection is reused, a poll
checks it has nothing to read: an idle connection that is readable was
closed by the peer (or is out of step) and is replaced by a fresh one
before anything is sent. What remains is the race of the peer closing
while the request is on its way; for that, see Transport.send.

A proxy named by the environment (http_proxy, https_proxy, no_proxy) for
the node's address sends the requests through urllib, as before: one
connection each.
"""

from __future__ import annotations

import http.client
import re
import select
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
import weakref
from typing import Callable, Dict, Optional, Tuple

# Failures of a reused connection that mean the peer had closed it before
# answering anything: RemoteDisconnected (EOF before the status line) is a
# ConnectionResetError; an abort or an EOF inside TLS are the others.
STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, ssl.SSLEOFError)

Replayable = Callable[[str, str], bool]

# _BAD_TARGET: what a request target must not hold. http.client refuses it
# too, but only once the connection is open; checked first, no connection
# is opened (or spoiled) for it.
_BAD_TARGET = re.compile(r"[\x00-\x20\x7f]")


class _OneSend:
    """An HTTPConnection whose request with a body goes in one send: http.client
    sends the headers, then the body; the headers are held and sent with the
    body (one segment instead of two, with TCP_NODELAY)."""

    _held: Optional[bytes] = None

    def request(self, method, url, body=None, headers={}, **kw):  # noqa: B006 (http.client's signature)
        self._held = b"" if body else None
        try:
            super().request(method, url, body=body, headers=headers, **kw)  # type: ignore[misc]
        finally:
            self._held = None

    def send(self, data):
        held = self._held
        if held is not None:
            if not held:  # the headers: wait for the body
                self._held = data
                return
            self._held = None
            data = held + data
        super().send(data)  # type: ignore[misc]


class _HTTPConnection(_OneSend, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_OneSend, http.client.HTTPSConnection):
    pass


class _Held:
    """A thread's connection and the poller that tells whether it was closed while idle."""

    __slots__ = ("conn", "poller", "__weakref__")

    def __init__(self, conn: http.client.HTTPConnection):
        self.conn = conn
        self.poller = None


class Transport:
    """Sends requests to one base URL on a connection per thread.

    replayable(method, path) says whether a request whose reused connection
    failed after it was sent, before any byte of an answer, may be sent
    once more on a fresh connection (see send).
    """

    def __init__(self, base_url: str, replayable: Replayable):
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"orderly: base URL {base_url!r}: want http:// or https:// and a host")
        self.base_url = base_url
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port
        self.prefix = u.path.rstrip("/")
        self.replayable = replayable
        self._local = threading.local()
        proxies = urllib.request.getproxies()
        self.proxied = u.scheme in proxies and not urllib.request.proxy_bypass(u.netloc)
        # connects counts the connections opened (the tests read it);
        # _open_conns every thread's connection, for close. A thread that
        # ends drops its own: a finalizer closes it.
        self.connects = 0
        self._lock = threading.Lock()
        self._open_conns: "weakref.WeakSet[_Held]" = weakref.WeakSet()

    def _open(self, timeout: float) -> _Held:
        if self.https:
            # context None: http.client's default, the one urlopen used
            # (ssl.create_default_context: certificates and host checked).
            conn: http.client.HTTPConnection = _HTTPSConnection(self.host, self.port, timeout=timeout)
        else:
            conn = _HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.connect()  # TCP_NODELAY set by http.client
        except OSError as e:
            conn.close()
            raise urllib.error.URLError(e) from None  # as urlopen raised it
        held = _Held(conn)
        weakref.finalize(held, conn.close)
        with self._lock:
            self.connects += 1
            self._open_conns.add(held)
        return held

    def _reusable(self, timeout: float) -> Optional[_Held]:
        """This thread's open connection, if it has one the peer has not closed."""
        held: Optional[_Held] = getattr(self._local, "held", None)
        if held is None:
            return None
        sock = held.conn.sock
        if sock is None:  # closed after "Connection: close" or a failure
            self._local.held = None
            return None
        try:
            if hasattr(select, "poll"):
                if held.poller is None:
                    held.poller = select.poll()
                    held.poller.register(sock, select.POLLIN)
                readable = bool(held.poller.poll(0))
            else:
                readable = bool(select.select([sock], [], [], 0)[0])
        except (OSError, ValueError):
            readable = True
        if readable:  # EOF (closed by the peer) or bytes nobody asked for
            self._drop(held)
            return None
        if held.conn.timeout != timeout:
            held.conn.timeout = timeout
            sock.settimeout(timeout)
        return held

    def _drop(self, held: _Held) -> None:
        held.conn.close()
        with self._lock:
            self._open_conns.discard(held)
        if getattr(self._local, "held", None) is held:
            self._local.held = None

    def close_local(self) -> None:
        """Closes the calling thread's connection (a thread that is done with the node)."""
        held = getattr(self._local, "held", None)
        if held is not None:
            self._drop(held)

    def close(self) -> None:
        """Closes every thread's connection; a thread's next request opens another."""
        with self._lock:
            all_held = list(self._open_conns)
            self._open_conns.clear()
        for held in all_held:
            held.conn.close()

    def send(self, method: str, path: str, data: Optional[bytes], headers: Dict[str, str],
             timeout: float) -> Tuple[int, str, bytes]:
        """Sends a request; returns (status, reason, body) whatever the status.

        A failure to connect or to send on a fresh connection raises
        urllib.error.URLError, a failure while awaiting the answer the
        OSError itself (a timeout, a reset), as urlopen did.

        A reused connection that fails (STALE) before any byte of the answer
        has arrived was closed by the node in the meantime: the request goes
        once more, on a fresh connection, when
          - the failure came while sending (the node did not take a whole
            request: nothing happened), for every request;
          - or it came while awaiting the answer and replayable(method, path)
            allows it (see Client._replayable for why each route may).
        A fresh connection's failure is never retried: it is the node's
        answer to this request.
        """
        if _BAD_TARGET.search(path):
            raise http.client.InvalidURL(f"URL can't contain control characters or spaces: {path!r}")
        if self.proxied:
            return self._send_urllib(method, path, data, headers, timeout)
        held = self._reusable(timeout)
        if held is not None:
            try:
                return self._exchange(held, method, path, data, headers)
            except _SendFailed as e:
                if not isinstance(e.err, STALE):
                    raise urllib.error.URLError(e.err) from None
            except STALE:
                if not self.replayable(method, path):
                    raise
        held = self._open(timeout)
        self._local.held = held
        try:
            return self._exchange(held, method, path, data, headers)
        except _SendFailed as e:
            raise urllib.error.URLError(e.err) from None

    def _exchange(self, held: _Held, method: str, path: str, data: Optional[bytes],
                  headers: Dict[str, str]) -> Tuple[int, str, bytes]:
        conn = held.conn
        try:
            conn.request(method, self.prefix + path, body=data, headers=headers)
        except OSError as e:
            self._drop(held)
            raise _SendFailed(e) from None
        except BaseException:  # a header http.client refuses: the connection is mid-request
            self._drop(held)
            raise
        try:
            resp = conn.getresponse()
            body = resp.read()
        except BaseException:
            self._drop(held)
            raise
        # http.client closes the connection itself after an answer that
        # will close it ("Connection: close", HTTP/1.0, a body that ends
        # with the close): conn.sock is None then, and the next request of
        # this thread opens another.
        if conn.sock is None:
            self._drop(held)
        return resp.status, resp.reason, body

    def _send_urllib(self, method: str, path: str, data: Optional[bytes], headers: Dict[str, str],
                     timeout: float) -> Tuple[int, str, bytes]:
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.reason, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, str(e.reason), e.read()


class _SendFailed(Exception):
    """A request could not be sent whole: err is the OSError of the send."""

    def __init__(self, err: OSError):
        super().__init__(str(err))
        self.err = err
