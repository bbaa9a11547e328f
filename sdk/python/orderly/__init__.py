"""Orderly's Python SDK (standard library only, Python 3.9+).

- Client: enqueue a batch, look up and cancel a job, state get and
  compare-and-set, the change feed (docs/http-api.md, docs/stateful.md).
- Webhook receivers: verify_request checks Orderly-Signature or Standard
  Webhooks signatures; parse_request and Answer read a delivery and build
  its answer (docs/webhooks.md).
- Worker: a pull-worker loop with concurrency, deadline extension and a
  graceful stop (issue 27's pull protocol).
"""

from .client import Client, Conflict, FeedEntry, FeedPage, Job, OrderlyError, State
from .webhook import (
    Answer,
    Delivery,
    Payload,
    SignatureError,
    WebhookJob,
    parse_request,
    receiver_handler,
    sign_orderly,
    sign_standard,
    standard_key,
    verify_orderly,
    verify_request,
    verify_standard,
)
from .worker import LeaseLost, Window, Worker

__all__ = [
    "Answer", "Client", "Conflict", "Delivery", "FeedEntry", "FeedPage", "Job", "LeaseLost",
    "OrderlyError", "Payload", "SignatureError", "State", "WebhookJob", "Window", "Worker",
    "parse_request", "receiver_handler", "sign_orderly", "sign_standard", "standard_key",
    "verify_orderly", "verify_request", "verify_standard",
]
