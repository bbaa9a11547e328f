#!/usr/bin/env python3
"""An order's lifecycle as an Orderly webhook receiver (standard library only).

The orders queue is stateful (state: true): each delivery carries, per order
id, its events (payloads, oldest first), its state and version, and
"timer": true when the order's timer brought it. The answer sets each
order's new state and its timer; Orderly commits both with the order's
acknowledgement (docs/contract.md §6.4 and §11). The logic is the Go
example's (order.go):

  created  -> status created, a timer in UNPAID_AFTER seconds
  paid     -> status paid (from created), the timer cleared
  shipped  -> status shipped (from paid)
  timer    -> an order still created is cancelled
  anything else is kept in the order's history, marked ignored.

Each change to paid, shipped or cancelled emits a job to the notifications
queue ("emit", with "from": the order's id), committed with the order's
acknowledgement. Deliveries of the notifications queue (the same endpoint)
are printed: "notified order-2: cancelled".

Run it, then a node with orderly.yaml (README.md):

  ORDERLY_SECRET=change-me python3 receiver.py --port 9000
  orderly --config orderly.yaml

With a secret (--secret or ORDERLY_SECRET), requests whose
Orderly-Signature does not verify are answered 401.
"""

import argparse
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# How far a signature's time may be from now, as Orderly's own verifier.
TOLERANCE_SECONDS = 300


def verify(secret, header, body, now=None):
    """Checks an Orderly-Signature header: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">."""
    if not header:
        return False
    parts = {}
    sigs = []
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        if key == "v1":
            sigs.append(value)
        else:
            parts[key] = value
    try:
        t = int(parts.get("t", ""))
    except ValueError:
        return False
    now = time.time() if now is None else now
    if abs(now - t) > TOLERANCE_SECONDS:
        return False
    want = hmac.new(secret, str(t).encode() + b"." + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(want, s) for s in sigs)


def apply(order, event):
    """Applies one event; returns "set", "clear" or None for the order's timer."""
    kind = event.get("event") if isinstance(event, dict) else None
    status = order.get("status", "")
    if kind == "created" and status == "":
        order["status"] = "created"
        if event.get("total"):
            order["total"] = event["total"]
        order["events"].append("created")
        return "set"
    if kind == "paid" and status == "created":
        order["status"] = "paid"
        order["events"].append("paid")
        return "clear"
    if kind == "shipped" and status == "paid":
        order["status"] = "shipped"
        order["events"].append("shipped")
        return None
    order["events"].append("%s (ignored: %s)" % (kind, status or "unknown order"))
    return None


def rfc3339(t):
    return t.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


NOTIFY = ("paid", "shipped", "cancelled")

# The server answers each call on a thread of its own: lines are printed
# under this lock, so that two calls' lines never interleave.
PRINT_LOCK = threading.Lock()


def say(line):
    with PRINT_LOCK:
        print(line, flush=True)


def notification(order_id, order):
    """The emit of a notification: its score, the event's place in the
    order's history, makes a repeated emit merge with the first."""
    return {"from": order_id, "queue": "notifications", "id": order_id,
            "payload": {"order": order_id, "status": order["status"]},
            "score": len(order["events"])}


def handle(request, unpaid_after):
    """Returns the answer to one delivery of the orders queue:
    {"state": {...}, "timers": {...}, "emit": [...]}."""
    states, timers, emits = {}, {}, []
    for job in request.get("jobs", []):
        order_id = job["id"]
        order = job.get("state") or {}  # null: a new order (or a deleted state)
        order.setdefault("status", "")
        order.setdefault("events", [])
        for p in job.get("payloads", []):
            was = order["status"]
            # Events are JSON; a payload that is not comes as payload_base64.
            change = apply(order, p.get("payload"))
            if change == "set":
                timers[order_id] = rfc3339(datetime.now(timezone.utc) + timedelta(seconds=unpaid_after))
            elif change == "clear":
                timers[order_id] = None
            if order["status"] != was and order["status"] in NOTIFY:
                emits.append(notification(order_id, order))
        if job.get("timer") and order["status"] == "created":
            order["status"] = "cancelled"
            order["events"].append("cancelled (unpaid)")
            emits.append(notification(order_id, order))
        states[order_id] = order
    answer = {"state": states}
    if timers:
        answer["timers"] = timers
    if emits:
        answer["emit"] = emits
    return answer


def make_handler(secret, unpaid_after, quiet):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if secret and not verify(secret, self.headers.get("Orderly-Signature"), body):
                return self.reply(401, {"error": "bad or missing Orderly-Signature"})
            try:
                request = json.loads(body)
            except ValueError:
                return self.reply(400, {"error": "the body is not JSON"})
            if request.get("queue") == "notifications":
                # A real receiver would send an email; this one prints.
                for job in request.get("jobs", []):
                    for p in job.get("payloads", []):
                        n = p.get("payload") or {}
                        say("notified %s: %s" % (n.get("order"), n.get("status")))
                return self.reply(200, None)  # an empty body acknowledges every job
            answer = handle(request, unpaid_after)
            if not quiet:
                for job_id, order in answer["state"].items():
                    say("%s %s: %s" % (self.headers.get("Orderly-Delivery"), job_id, order["status"]))
            self.reply(200, answer)

        def reply(self, status, obj):
            data = b"" if obj is None else json.dumps(obj).encode()
            self.send_response(status)
            if data:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt, *args):  # the request log would drown the orders
            pass

    return Handler


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9000, help="0 picks a free port")
    ap.add_argument("--secret", default=os.environ.get("ORDERLY_SECRET", ""),
                    help="the queue's handler.secret [env ORDERLY_SECRET]; empty: no check")
    ap.add_argument("--unpaid-after", type=float, default=2.0,
                    help="seconds a created order may stay unpaid before it is cancelled")
    ap.add_argument("--quiet", action="store_true", help="do not print each order's new status")
    args = ap.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port),
                                 make_handler(args.secret.encode(), args.unpaid_after, args.quiet))
    print("listening on http://%s:%d/perform" % server.server_address[:2], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main(sys.argv[1:])
