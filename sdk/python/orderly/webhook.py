"""Webhook receivers: signature checks (both schemes), the request, the answer.

The protocol is docs/webhooks.md and webhook/wire: the node POSTs
{"queue", "shard", "jobs": [...]} signed with Orderly-Signature
(t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>) or, with
handler.signature: standard, the Standard Webhooks headers; the receiver
answers 2xx with an empty body (every id done) or with an answer.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

DEFAULT_TOLERANCE = 300.0  # seconds, either way, as wire.DefaultTolerance
Secret = Union[str, bytes]
Delay = Union[int, float, str]


class SignatureError(Exception):
    """A request whose signature is missing, malformed, wrong or too old: answer 401."""


def _bytes(s: Secret) -> bytes:
    return s.encode() if isinstance(s, str) else bytes(s)


def _secrets(secrets: Union[Secret, Sequence[Secret]]) -> List[Secret]:
    if isinstance(secrets, (str, bytes, bytearray)):
        secrets = [secrets]
    out = [s for s in secrets if s]
    if not out:
        raise SignatureError("the secret is empty; refusing every signature")
    return out


def _check_age(ts: int, tolerance: float, now: Optional[float]) -> None:
    if tolerance < 0:
        return
    now = time.time() if now is None else now
    if abs(now - ts) > (tolerance or DEFAULT_TOLERANCE):
        raise SignatureError("signature timestamp outside the tolerance")


# Orderly's scheme.

def sign_orderly(secret: Secret, timestamp: int, body: bytes) -> str:
    """The Orderly-Signature header's value for body sent at timestamp (unix seconds)."""
    ts = str(int(timestamp))
    mac = hmac.new(_bytes(secret), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={ts},v1={mac}"


def verify_orderly(header: Optional[str], body: bytes, secrets: Union[Secret, Sequence[Secret]],
                   tolerance: float = DEFAULT_TOLERANCE, now: Optional[float] = None) -> None:
    """Checks an Orderly-Signature header against the raw body.

    One v1 value must match under one of secrets (several during a rotation)
    and t must be within tolerance seconds of now (negative: no check).
    Raises SignatureError.
    """
    keys = _secrets(secrets)
    if not header or not header.strip():
        raise SignatureError("no Orderly-Signature header")
    ts: Optional[str] = None
    sigs: List[bytes] = []
    for part in header.split(","):
        k, sep, v = part.strip().partition("=")
        if not sep:
            raise SignatureError("Orderly-Signature: a part is not key=value")
        if k == "t":
            if ts is not None:
                raise SignatureError("Orderly-Signature: two timestamps")
            ts = v
        elif k == "v1":
            try:
                sig = bytes.fromhex(v)
            except ValueError:
                sig = b""
            if len(sig) != 32:
                raise SignatureError("Orderly-Signature: v1 is not a hex SHA-256 HMAC")
            sigs.append(sig)
    if ts is None:
        raise SignatureError("Orderly-Signature: no timestamp (t=)")
    try:
        unix = int(ts)
    except ValueError:
        raise SignatureError("Orderly-Signature: the timestamp is not an integer") from None
    if not sigs:
        raise SignatureError("Orderly-Signature: no v1 signature")
    matched = False
    for key in keys:
        want = hmac.new(_bytes(key), ts.encode() + b"." + body, hashlib.sha256).digest()
        for sig in sigs:
            if hmac.compare_digest(sig, want):
                matched = True
    if not matched:
        raise SignatureError("Orderly-Signature: no v1 signature matches the body")
    _check_age(unix, tolerance, now)


# Standard Webhooks.

def standard_key(secret: Secret) -> bytes:
    """The HMAC key of a Standard Webhooks secret "whsec_<base64>" (or bare base64)."""
    s = secret.decode() if isinstance(secret, (bytes, bytearray)) else secret
    b64 = s[len("whsec_"):] if s.startswith("whsec_") else s
    b64 = b64.rstrip("=")
    try:
        key = base64.b64decode(b64 + "=" * (-len(b64) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError("a Standard Webhooks secret is whsec_ and a base64 key") from None
    if not key:
        raise SignatureError("a Standard Webhooks secret is whsec_ and a base64 key")
    return key


def _standard_key_of(secret: Secret) -> bytes:
    # As wire.VerifyRequest: a "whsec_" string is decoded, other bytes are the key itself.
    if _bytes(secret).startswith(b"whsec_"):
        return standard_key(secret)
    return _bytes(secret)


def sign_standard(secret: Secret, msg_id: str, timestamp: int, body: bytes) -> str:
    """The webhook-signature value: "v1," and base64 HMAC-SHA256 of "<id>.<timestamp>.<body>"."""
    mac = hmac.new(_standard_key_of(secret), f"{msg_id}.{int(timestamp)}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def verify_standard(msg_id: Optional[str], timestamp: Optional[str], signature: Optional[str], body: bytes,
                    secrets: Union[Secret, Sequence[Secret]], tolerance: float = DEFAULT_TOLERANCE,
                    now: Optional[float] = None) -> None:
    """Checks Standard Webhooks headers (webhook-id, -timestamp, -signature) against the raw body.

    A secret is "whsec_<base64>" or the key's bytes. Any of the
    space-separated v1 signatures may match (other versions are skipped).
    Raises SignatureError.
    """
    keys = [_standard_key_of(s) for s in _secrets(secrets)]
    if not signature or not signature.strip():
        raise SignatureError("no webhook-signature header")
    if not msg_id:
        raise SignatureError("no webhook-id header")
    try:
        unix = int(timestamp or "")
    except ValueError:
        raise SignatureError("webhook-timestamp is not an integer") from None
    signed = f"{msg_id}.{timestamp}.".encode() + body
    wants = [hmac.new(k, signed, hashlib.sha256).digest() for k in keys]
    matched = False
    for part in signature.split():
        version, sep, b64 = part.partition(",")
        if not sep or version != "v1":
            continue
        try:
            sig = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            continue
        for want in wants:
            if hmac.compare_digest(sig, want):
                matched = True
    if not matched:
        raise SignatureError("webhook-signature: no v1 signature matches the body")
    _check_age(unix, tolerance, now)


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    get = getattr(headers, "get", None)
    v = get(name) if get else None
    if v is not None:
        return v
    low = name.lower()
    for k, val in headers.items():
        if k.lower() == low:
            return val
    return None


def verify_request(headers: Mapping[str, str], body: bytes, secrets: Union[Secret, Sequence[Secret]],
                   tolerance: float = DEFAULT_TOLERANCE, now: Optional[float] = None) -> str:
    """Verifies a delivery by the headers it carries: Orderly-Signature, else Standard Webhooks.

    secrets: one or several (a rotation); for the standard scheme a
    "whsec_..." string. Returns the scheme ("orderly" or "standard");
    raises SignatureError.
    """
    sig = _header(headers, "Orderly-Signature")
    if sig is not None:
        verify_orderly(sig, body, secrets, tolerance, now)
        return "orderly"
    std = _header(headers, "webhook-signature")
    if std is not None:
        verify_standard(_header(headers, "webhook-id"), _header(headers, "webhook-timestamp"), std, body,
                        secrets, tolerance, now)
        return "standard"
    _secrets(secrets)
    raise SignatureError("no Orderly-Signature or webhook-signature header")


# The request.

_UNSET: Any = object()


class Payload:
    """One payload of a job: data (the bytes), score, headers.

    A payload that came as JSON keeps its decoded value: data encodes it
    (compactly) only when read, and json() returns that value itself (the
    same object each call) instead of decoding data again.
    """

    __slots__ = ("_data", "_value", "score", "headers")

    def __init__(self, data: bytes, score: float, headers: Optional[Dict[str, str]] = None):
        self._data: Optional[bytes] = data
        self._value: Any = _UNSET
        self.score = score
        self.headers: Dict[str, str] = {} if headers is None else headers

    @classmethod
    def _decoded(cls, value: Any, score: float, headers: Dict[str, str]) -> "Payload":
        """A payload from its decoded JSON value; data is encoded when first read."""
        p = cls.__new__(cls)
        p._data = None
        p._value = value
        p.score = score
        p.headers = headers
        return p

    @property
    def data(self) -> bytes:
        """The payload's bytes (a JSON payload's compact encoding)."""
        if self._data is None:
            self._data = json.dumps(self._value, separators=(",", ":")).encode()
        return self._data

    @data.setter
    def data(self, value: bytes) -> None:
        self._data = value
        self._value = _UNSET

    def json(self) -> Any:
        """The payload decoded as JSON."""
        if self._value is not _UNSET:
            return self._value
        return json.loads(self.data)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        o: Payload = other  # type: ignore[assignment]
        return (self.data, self.score, self.headers) == (o.data, o.score, o.headers)

    def __repr__(self) -> str:
        return f"Payload(data={self.data!r}, score={self.score!r}, headers={self.headers!r})"


def _payload(p: Dict[str, Any]) -> Payload:
    if "payload_base64" in p:
        return Payload(base64.b64decode(p["payload_base64"]), p.get("score", 0), p.get("headers") or {})
    return Payload._decoded(p.get("payload"), p.get("score", 0), p.get("headers") or {})


@dataclass
class WebhookJob:
    """A job of a delivery or a pull window (webhook/wire.Job)."""

    id: str
    retry_count: int
    perform_at: float
    payloads: List[Payload]
    error: str = ""
    state: Any = None  # stateful queues: the state (None: none, or deleted)
    state_bytes: Optional[bytes] = None  # when the state is not JSON
    deleted: bool = False
    version: Optional[int] = None
    timer: bool = False  # the job came of its timer

    @classmethod
    def from_json(cls, j: Dict[str, Any]) -> "WebhookJob":
        get = j.get
        job = cls(j["id"], int(get("retry_count", -1)), get("perform_at", 0),
                  [_payload(p) for p in get("payloads") or ()])
        if len(j) > 4:  # more than id, retry_count, perform_at and payloads
            job.error = get("error", "")
            job.state = get("state")
            if "state_base64" in j:
                job.state_bytes = base64.b64decode(j["state_base64"])
            job.deleted = bool(get("deleted"))
            job.version = get("version")
            job.timer = bool(get("timer"))
        return job


@dataclass
class Delivery:
    """A webhook request: queue, shard, jobs, and the Orderly-Delivery name when known."""

    queue: str
    shard: int
    jobs: List[WebhookJob]
    name: str = ""


def parse_request(body: bytes, headers: Optional[Mapping[str, str]] = None) -> Delivery:
    """Decodes a webhook request's body (verify it first)."""
    doc = json.loads(body)
    return Delivery(queue=doc["queue"], shard=int(doc["shard"]),
                    jobs=[WebhookJob.from_json(j) for j in doc.get("jobs") or []],
                    name=(_header(headers, "Orderly-Delivery") or "") if headers else "")


# The answer.

def _rfc3339(at: Union[str, float, _dt.datetime]) -> str:
    if isinstance(at, str):
        return at
    if not isinstance(at, _dt.datetime):
        at = _dt.datetime.fromtimestamp(at, tz=_dt.timezone.utc)
    if at.tzinfo is None:
        at = at.replace(tzinfo=_dt.timezone.utc)
    return at.astimezone(_dt.timezone.utc).isoformat().replace("+00:00", "Z")


class Answer:
    """The answer to a delivery or a pull window (webhook/wire.Answer).

    Ids not named are acknowledged (done). Each method returns self.
    """

    def __init__(self) -> None:
        self.failed: Dict[str, str] = {}
        self.retry_in: Dict[str, Delay] = {}
        self.dead: Dict[str, str] = {}
        self.discard: Dict[str, str] = {}
        self.state: Dict[str, Any] = {}
        self.timers: Dict[str, Optional[str]] = {}
        self.emit: List[Dict[str, Any]] = []
        self.result: Dict[str, Any] = {}

    def fail(self, id: str, error: str) -> "Answer":
        """The id failed: retried by the queue's policy."""
        self.failed[id] = error
        return self

    def retry_after(self, id: str, delay: Delay, error: str = "") -> "Answer":
        """The id is retried after delay (seconds, or a duration string such as "90s")."""
        self.retry_in[id] = delay
        if error:
            self.failed[id] = error
        return self

    def kill(self, id: str, error: str) -> "Answer":
        """The id goes to the morgue now (dead)."""
        self.dead[id] = error
        return self

    def drop(self, id: str, reason: str) -> "Answer":
        """The id's payloads are discarded without a retry."""
        self.discard[id] = reason
        return self

    def set_state(self, id: str, value: Any) -> "Answer":
        """Sets (any JSON value) or deletes (None) the id's state, committed with the ack."""
        self.state[id] = value
        return self

    def set_timer(self, id: str, at: Union[None, str, float, _dt.datetime]) -> "Answer":
        """Sets the id's timer (unix seconds, datetime or RFC 3339), or clears it (None)."""
        self.timers[id] = None if at is None else _rfc3339(at)
        return self

    def add_emit(self, from_id: str, queue: str, id: str, payload: Any = None, score: Optional[float] = None,
                 perform_in: Optional[Delay] = None, headers: Optional[Dict[str, str]] = None) -> "Answer":
        """Enqueues a job into queue on behalf of from_id, committed with from_id's ack."""
        e: Dict[str, Any] = {"from": from_id, "queue": queue, "id": id}
        if isinstance(payload, (bytes, bytearray)):
            e["payload_base64"] = base64.b64encode(payload).decode()
        elif payload is not None:
            e["payload"] = payload
        if score is not None:
            e["score"] = score
        if perform_in is not None:
            e["perform_in"] = perform_in
        if headers:
            e["headers"] = headers
        self.emit.append(e)
        return self

    def set_result(self, id: str, value: Any) -> "Answer":
        """Sets the id's result (kept on a queue with retain_finished)."""
        self.result[id] = value
        return self

    def to_json(self) -> Dict[str, Any]:
        """The answer's JSON object, without empty fields ({} acknowledges every id)."""
        out: Dict[str, Any] = {}
        for name in ("failed", "retry_in", "dead", "discard", "state", "timers", "emit", "result"):
            v = getattr(self, name)
            if v:
                out[name] = v
        return out


Handler = Callable[[Delivery], Optional[Answer]]


def receiver_handler(handler: Handler, secrets: Union[Secret, Sequence[Secret]],
                     tolerance: float = DEFAULT_TOLERANCE, max_bytes: int = 64 << 20):
    """A http.server request handler class for a webhook receiver.

    Each POST is verified (401 when the signature fails), decoded and given
    to handler, whose Answer (or None: every id done) is the response. An
    exception in handler answers 500: the whole delivery fails and is retried.

        server = ThreadingHTTPServer(("127.0.0.1", 9000), receiver_handler(perform, secret))
        server.serve_forever()
    """
    keys = _secrets(secrets)

    class _Receiver(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: bytes = b"") -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            n = int(self.headers.get("Content-Length") or 0)
            if n > max_bytes:
                self._send(413, b'{"error":"too large"}')
                return
            body = self.rfile.read(n)
            try:
                verify_request(self.headers, body, keys, tolerance)
            except SignatureError as e:
                self._send(401, json.dumps({"error": str(e)}).encode())
                return
            try:
                answer = handler(parse_request(body, self.headers))
            except Exception as e:  # the delivery fails; the node retries it
                self._send(500, json.dumps({"error": str(e)}).encode())
                return
            self._send(200, json.dumps(answer.to_json() if answer else {}).encode())

    return _Receiver


