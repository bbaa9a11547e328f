"""The HTTP API client: enqueue, job lookup and cancel, state, feed."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

Delay = Union[int, float, str]


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

    # The transport.

    def request(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None):
        """Sends a request; returns (status, decoded JSON or None).

        2xx answers are returned; other statuses raise OrderlyError (Conflict for 409).
        """
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                doc = json.loads(raw) if raw else {}
            except ValueError:
                doc = {"error": raw.decode("utf-8", "replace")}
            if not isinstance(doc, dict):
                doc = {"error": str(doc)}
            cls = Conflict if e.code == 409 else OrderlyError
            raise cls(e.code, str(doc.get("error") or doc.get("reason") or e.reason), str(doc.get("field") or ""), doc) from None

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
