"""The HTTP API client: enqueue, job lookup and cancel, state, feed."""

from __future__ import annotations

import base64
import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ._conn import Transport

Delay = Union[int, float, str]

USER_AGENT = "orderly-python"


class OrderlyError(Exception):
    """An error answer of the node: status and the {"error", "field"} body."""

    def __init__(self, status: int, message: str, field: str = "", body: Any = None):
        super().__init__(f"orderly: HTTP {status}: {message}" + (f" ({field})" if field else ""))
        self.status = status
        self.message = message
        self.field = field
        self.body = body


class Conflict(OrderlyError):
    """A 409: a stale compare-and-set version, or a lease no longer valid."""


@dataclass
class Job:
    """A job to enqueue (the NewJob object of POST /api/v1/queues/{q}/jobs).

    payload is any JSON value; payload_bytes is sent as payload_base64.
    perform_in is seconds (a number) or a Go duration ("90s"); perform_at is
    unix seconds. expires_in (a delay, as perform_in) or expires_at (unix
    seconds) make the payload expire: not handed to a handler by then, it
    is discarded at fetch. priority, 1 (first) to 4, orders the due ids of
    a shard. Give at most one of each pair.
    """

    id: str
    payload: Any = None
    payload_bytes: Optional[bytes] = None
    score: Optional[float] = None
    perform_in: Optional[Delay] = None
    perform_at: Optional[float] = None
    headers: Optional[Dict[str, str]] = None
    dedup_key: Optional[str] = None
    expires_in: Optional[Delay] = None
    expires_at: Optional[float] = None
    priority: Optional[int] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"id": self.id}
        if self.payload_bytes is not None:
            out["payload_base64"] = base64.b64encode(self.payload_bytes).decode()
        elif self.payload is not None:
            out["payload"] = self.payload
        for name in ("score", "perform_in", "perform_at", "headers", "dedup_key", "expires_in", "expires_at", "priority"):
            v = getattr(self, name)
            if v is not None:
                out[name] = v
        return out


@dataclass
class State:
    """A stateful queue's state of an id: value (None when none) and version."""

    value: Any
    version: int
    raw: Optional[bytes] = None  # when the state is not JSON (state_base64)


@dataclass
class FeedEntry:
    """One committed state change of the change feed."""

    pos: str
    id: str
    version: int
    at: float
    state: Any = None
    state_bytes: Optional[bytes] = None
    state_sha1: Optional[str] = None
    deleted: bool = False


@dataclass
class FeedPage:
    """Feed entries after a position, and the position to read on from."""

    entries: List[FeedEntry] = field(default_factory=list)
    next: str = ""


class Client:
    """A client of a node's HTTP API.

    base_url is the node's address (http://127.0.0.1:8080); token the
    node's http_token (or a read token for reads), sent as a bearer token.
    """

    def __init__(self, base_url: str, token: Optional[str] = None, timeout: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._transport = Transport(self.base_url, self._replayable)
        self._headers_token: Optional[str] = None
        self._headers_cache: Optional[Tuple[Dict[str, str], Dict[str, str]]] = None

    # The transport.

    def request(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None):
        """Sends a request; returns (status, decoded JSON or None).

        2xx answers are returned; other statuses raise OrderlyError (Conflict for 409).
        Each thread keeps a connection to the node and reuses it (see _conn).
        """
        return self._send(method, path, None if body is None else json.dumps(body).encode(), timeout)

    def _headers(self, with_body: bool) -> Dict[str, str]:
        """The request headers, built once per token (a request with a body and one without)."""
        if self._headers_token is not self.token or self._headers_cache is None:
            plain = {"Accept": "application/json", "User-Agent": USER_AGENT}
            if self.token:
                if any(c in self.token for c in "\r\n\0"):
                    raise ValueError("orderly: the token holds a line break or NUL")
                plain["Authorization"] = "Bearer " + self.token
            self._headers_cache = (plain, dict(plain, **{"Content-Type": "application/json"}))
            self._headers_token = self.token
        return self._headers_cache[1 if with_body else 0]

    def _send(self, method: str, path: str, data: Optional[bytes], timeout: Optional[float] = None):
        """request() with the body already encoded (None: no body)."""
        status, reason, raw = self._transport.send(method, path, data, self._headers(data is not None),
                                                   timeout or self.timeout)
        if 200 <= status < 300:
            return status, (json.loads(raw) if raw else None)
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            doc = {"error": raw.decode("utf-8", "replace")}
        if not isinstance(doc, dict):
            doc = {"error": str(doc)}
        cls = Conflict if status == 409 else OrderlyError
        raise cls(status, str(doc.get("error") or doc.get("reason") or reason), str(doc.get("field") or ""), doc)

    def close(self) -> None:
        """Closes the connections kept to the node (call it when no request is
        in flight); a later request opens a new one."""
        self._transport.close()

    @staticmethod
    def _replayable(method: str, path: str) -> bool:
        """Whether a request may go once more after its kept-alive connection
        failed once it was sent, before any byte of the answer.

        The node closes a connection without answering when it closed it as
        idle before the request arrived (then nothing happened), or when it
        died during the request (then it may have been done). So a second
        sending must be harmless if the first one was done:
          - reads (GET): nothing changes;
          - pull: a lost first lease is orphaned whether or not the pull
            goes again (the worker would pull after retry_pause anyway): its
            ids come back after one lease deadline, as when a worker dies;
          - a pull answer: done once, the second gets 409 (the lease is
            answered), which the worker logs; nothing commits twice. A next
            window the first took is orphaned as a lost pull is;
          - extend: moves the deadline to `by` after now again, never earlier.
        Not an enqueue: a second one could queue the payloads twice (a
        dedup_key would catch it, but not every job has one); nor a state
        PUT or a cancel: done once, the second would raise Conflict or 404
        for a change that took. These go again only when the failure came
        while sending (see _conn.Transport.send).
        """
        if method in ("GET", "HEAD"):
            return True
        if method != "POST":
            return False
        return path.endswith(("/pull", "/answer", "/extend"))

    @staticmethod
    def _seg(s: str) -> str:
        return urllib.parse.quote(s, safe="")

    # Jobs.

    def enqueue(self, queue: str, jobs: Sequence[Union[Job, Dict[str, Any]]]) -> Dict[str, int]:
        """Enqueues jobs, all or nothing; returns {"enqueued": n, "duplicates": n}."""
        body = [j.to_json() if isinstance(j, Job) else j for j in jobs]
        _, doc = self.request("POST", f"/api/v1/queues/{self._seg(queue)}/jobs", body)
        return doc

    def job(self, queue: str, id: str) -> Optional[Dict[str, Any]]:
        """Everything known of an id (queued, processing, state, morgue, finished), or None."""
        try:
            _, doc = self.request("GET", f"/api/v1/queues/{self._seg(queue)}/jobs/{self._seg(id)}")
        except OrderlyError as e:
            if e.status == 404:
                return None
            raise
        return doc

    def cancel(self, queue: str, id: str, mode: Optional[str] = None) -> Dict[str, Any]:
        """Cancels an id everywhere (docs/contract.md §3.13); mode "kill" or "delete"."""
        body = {"mode": mode} if mode else {}
        _, doc = self.request("POST", f"/api/v1/queues/{self._seg(queue)}/jobs/{self._seg(id)}/actions/cancel", body)
        return doc

    # State and feed.

    def get_state(self, queue: str, id: str) -> State:
        """The state of an id of a stateful queue (value None, version 0 when none)."""
        _, doc = self.request("GET", f"/api/v1/queues/{self._seg(queue)}/state/{self._seg(id)}")
        if "state_base64" in doc:
            return State(None, int(doc["version"]), base64.b64decode(doc["state_base64"]))
        return State(doc.get("state"), int(doc["version"]))

    def set_state(self, queue: str, id: str, value: Any, version: int) -> int:
        """Compare-and-set: replaces version (0: none) with value (None deletes).

        Returns the new version; raises Conflict when version is stale.
        """
        _, doc = self.request("PUT", f"/api/v1/queues/{self._seg(queue)}/state/{self._seg(id)}",
                              {"state": value, "version": version})
        return int(doc["version"])

    def feed(self, queue: str, from_: str = "0", limit: Optional[int] = None,
             wait: Optional[float] = None) -> FeedPage:
        """Reads the change feed after from_ ("0", "$" or a pos); wait long-polls (<= 30 s)."""
        q = {"from": from_}
        if limit:
            q["limit"] = str(limit)
        if wait:
            q["wait"] = f"{wait}s"
        timeout = self.timeout + (wait or 0)
        _, doc = self.request("GET", f"/api/v1/queues/{self._seg(queue)}/feed?" + urllib.parse.urlencode(q),
                              timeout=timeout)
        page = FeedPage(next=doc["next"])
        for e in doc["entries"]:
            page.entries.append(FeedEntry(
                pos=e["pos"], id=e["id"], version=int(e["version"]), at=e["at"], state=e.get("state"),
                state_bytes=base64.b64decode(e["state_base64"]) if "state_base64" in e else None,
                state_sha1=e.get("state_sha1"), deleted=bool(e.get("deleted"))))
        return page
