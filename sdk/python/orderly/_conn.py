"""Kept-alive HTTP connections to a node: one per thread, reused request after request.

Each thread (a worker loop, the worker's extension thread, a caller's
thread) has a connection of its own to the node, opened at its first
request and kept while the node keeps it: an answer with "Connection:
close" (the node closes after some refusals, 401 or 413) or from an
HTTP/1.0 peer is read and the connection closed; the next request opens
another. A short-lived thread may release its connection when done, for
the next one to take (release_local); a thread that ends without doing so
has its connection closed.

The HTTP/1.1 exchange is this module's own (_Conn), not http.client's: a
request is written in one send, and the answer read from the
connection's buffer with its headers parsed in one piece, which costs a
fraction of http.client's per request (the pull worker makes one request
per window). It raises http.client's exceptions.

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
import socket
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
import weakref
from typing import Callable, Dict, List, Optional, Tuple

# Failures of a reused connection that mean the peer had closed it before
# answering anything: RemoteDisconnected (EOF before the status line) is a
# ConnectionResetError; an abort or an EOF inside TLS are the others.
STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, ssl.SSLEOFError)

Replayable = Callable[[str, str], bool]

# _RECV is the most bytes a read asks the socket for; _MAX_HEAD bounds an
# answer's status line and headers.
_RECV = 1 << 16
_MAX_HEAD = 1 << 16

# _BAD_TARGET: what a request target must not hold (http.client refuses it too).
_BAD_TARGET = re.compile(r"[\x00-\x20\x7f]")

# MAX_IDLE bounds the connections released by threads that were done with
# them, kept for the next thread.
MAX_IDLE = 8


class _Held:
    """A thread's connection and the poller that tells whether it was closed while idle."""

    __slots__ = ("conn", "poller", "__weakref__")

    def __init__(self, conn: "_Conn"):
        self.conn = conn
        self.poller = None


class _Conn:
    """One HTTP/1.1 connection: a request goes in one send, its answer is
    read from the connection's own buffer (the status line, the headers in
    one piece, the body by Content-Length, chunks or until the close).

    The exceptions are http.client's: RemoteDisconnected (a
    ConnectionResetError) when the peer closed before a byte of the
    answer, BadStatusLine, IncompleteRead, LineTooLong, InvalidURL; a
    socket's own errors (a timeout, a reset) as they come. sock is None
    once closed (after an answer that closes it, or close()).
    """

    __slots__ = ("sock", "timeout", "buf")

    def __init__(self, sock: socket.socket, timeout: float):
        self.sock: Optional[socket.socket] = sock
        self.timeout = timeout
        self.buf = bytearray()  # bytes read past the last answer's end: none expected

    def close(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()

    def send(self, data: bytes) -> None:
        assert self.sock is not None
        self.sock.sendall(data)

    def _recv(self) -> bytes:
        assert self.sock is not None
        return self.sock.recv(_RECV)

    def response(self, head: bool) -> Tuple[int, str, bytes]:
        """Reads an answer: (status, reason, body); closes the connection after
        an answer that says so, an HTTP/1.0 one, or one whose end is the close."""
        while True:
            status, reason, length, chunked, close = self._head()
            if not 100 <= status < 200 or status == 101:
                break
        if head or status in (204, 304) or 100 <= status < 200:
            body = b""
        elif chunked:
            body = self._chunked()
        elif length is not None:
            body = self._exactly(length)
        else:
            body = self._until_eof()
            close = True
        if close:
            self.close()
        return status, reason, body

    def _head(self) -> Tuple[int, str, Optional[int], bool, bool]:
        buf = self.buf
        end = buf.find(b"\r\n\r\n")
        while end < 0:
            if len(buf) > _MAX_HEAD:
                raise http.client.LineTooLong("the answer's headers")
            chunk = self._recv()
            if not chunk:
                if not buf:
                    raise http.client.RemoteDisconnected("Remote end closed connection without response")
                raise http.client.BadStatusLine(bytes(buf[:80]).decode("latin-1"))
            start = max(0, len(buf) - 3)
            buf += chunk
            end = buf.find(b"\r\n\r\n", start)
        lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
        del buf[:end + 4]
        parts = lines[0].split(" ", 2)
        try:
            version, status = parts[0], int(parts[1])
        except (IndexError, ValueError):
            raise http.client.BadStatusLine(lines[0]) from None
        if not version.startswith("HTTP/") or not 100 <= status <= 999:
            raise http.client.BadStatusLine(lines[0])
        reason = parts[2] if len(parts) > 2 else ""
        length: Optional[int] = None
        chunked = False
        conn = ""
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                continue
            name = name.strip().lower()
            if name == "content-length":
                try:
                    length = int(value)
                except ValueError:
                    raise http.client.HTTPException(f"bad Content-Length {value.strip()!r}") from None
                if length < 0:
                    raise http.client.HTTPException(f"bad Content-Length {value.strip()!r}")
            elif name == "transfer-encoding":
                chunked = value.strip().lower() == "chunked"
            elif name == "connection":
                conn = value.lower()
        close = "close" in conn or (version == "HTTP/1.0" and "keep-alive" not in conn)
        return status, reason, length, chunked, close

    def _exactly(self, n: int) -> bytes:
        buf = self.buf
        while len(buf) < n:
            chunk = self._recv()
            if not chunk:
                got = bytes(buf)
                buf.clear()
                raise http.client.IncompleteRead(got, n - len(got))
            buf += chunk
        if len(buf) == n:
            body = bytes(buf)
            buf.clear()
            return body
        body = bytes(buf[:n])
        del buf[:n]
        return body

    def _line(self) -> bytes:
        buf = self.buf
        end = buf.find(b"\n")
        while end < 0:
            if len(buf) > _MAX_HEAD:
                raise http.client.LineTooLong("a chunk's size line")
            chunk = self._recv()
            if not chunk:
                raise http.client.IncompleteRead(b"")
            start = len(buf)
            buf += chunk
            end = buf.find(b"\n", start)
        line = bytes(buf[:end + 1])
        del buf[:end + 1]
        return line

    def _chunked(self) -> bytes:
        out = []
        while True:
            size_line = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise http.client.IncompleteRead(b"".join(out)) from None
            if size == 0:
                while self._line() not in (b"\r\n", b"\n"):  # trailers, up to the empty line
                    pass
                return b"".join(out)
            out.append(self._exactly(size))
            self._exactly(2)  # the chunk's CRLF

    def _until_eof(self) -> bytes:
        buf = self.buf
        while True:
            chunk = self._recv()
            if not chunk:
                body = bytes(buf)
                buf.clear()
                return body
            buf += chunk


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
        default = 443 if self.https else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        self._host_header = host if self.port in (None, default) else f"{host}:{self.port}"
        self._ctx: Optional[ssl.SSLContext] = None
        self._local = threading.local()
        proxies = urllib.request.getproxies()
        self.proxied = u.scheme in proxies and not urllib.request.proxy_bypass(u.netloc)
        # connects counts the connections opened (the tests read it);
        # _open_conns every thread's connection, for close. A thread that
        # ends drops its own: a finalizer closes it.
        self.connects = 0
        self._lock = threading.Lock()
        self._open_conns: "weakref.WeakSet[_Held]" = weakref.WeakSet()
        # _idle: connections released by threads done with them (a worker's
        # extension threads, one per window), for the next thread to take.
        self._idle: List[_Held] = []

    def _open(self, timeout: float) -> _Held:
        try:
            sock = socket.create_connection((self.host, self.port or (443 if self.https else 80)), timeout)
        except OSError as e:
            raise urllib.error.URLError(e) from None  # as urlopen raised it
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.https:
                sock = self._tls().wrap_socket(sock, server_hostname=self.host)
        except OSError as e:
            sock.close()
            raise urllib.error.URLError(e) from None
        held = _Held(_Conn(sock, timeout))
        weakref.finalize(held, held.conn.close)
        with self._lock:
            self.connects += 1
            self._open_conns.add(held)
        return held

    def _tls(self) -> ssl.SSLContext:
        """http.client's default context, the one urlopen used (certificates and
        host checked), made once."""
        if self._ctx is None:
            ctx = ssl._create_default_https_context()
            ctx.set_alpn_protocols(["http/1.1"])
            if ctx.post_handshake_auth is not None:
                ctx.post_handshake_auth = True
            self._ctx = ctx
        return self._ctx

    def _reusable(self, timeout: float) -> Optional[_Held]:
        """This thread's open connection, if it has one the peer has not closed."""
        held: Optional[_Held] = getattr(self._local, "held", None)
        if held is None:
            with self._lock:
                held = self._idle.pop() if self._idle else None
            if held is None:
                return None
            self._local.held = held
        sock = held.conn.sock
        if sock is None:  # closed after "Connection: close" or a failure
            self._local.held = None
            return None
        if held.conn.buf:  # bytes past the last answer: out of step
            self._drop(held)
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

    def release_local(self) -> None:
        """Gives the calling thread's connection to the next thread that needs one
        (a short-lived thread that is done); beyond MAX_IDLE it is closed."""
        held = getattr(self._local, "held", None)
        if held is None:
            return
        self._local.held = None
        with self._lock:
            if held.conn.sock is not None and len(self._idle) < MAX_IDLE:
                self._idle.append(held)
                return
        self._drop(held)

    def close(self) -> None:
        """Closes every thread's connection; a thread's next request opens another."""
        with self._lock:
            all_held = list(self._open_conns)
            self._open_conns.clear()
            self._idle.clear()
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
        target = self.prefix + path
        head = [f"{method} {target} HTTP/1.1\r\nHost: {self._host_header}\r\nAccept-Encoding: identity\r\n"]
        for k, v in headers.items():
            head.append(f"{k}: {v}\r\n")
        if data is not None:
            head.append(f"Content-Length: {len(data)}\r\n\r\n")
        elif method in ("POST", "PUT", "PATCH"):
            head.append("Content-Length: 0\r\n\r\n")
        else:
            head.append("\r\n")
        msg = "".join(head).encode("latin-1")
        try:
            conn.send(msg + data if data else msg)
        except OSError as e:
            self._drop(held)
            raise _SendFailed(e) from None
        try:
            status, reason, body = conn.response(method == "HEAD")
        except BaseException:
            self._drop(held)
            raise
        # An answer that closes the connection ("Connection: close",
        # HTTP/1.0, a body that ends with the close) left conn.sock None:
        # the next request of this thread opens another.
        if conn.sock is None:
            self._drop(held)
        return status, reason, body

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
