// Package wire is the webhook protocol: the body the node POSTs to a
// receiver (Request, Job, Payload), the answer a receiver writes (Answer,
// Emit), the headers of a delivery, and the signature scheme (Sign, Verify,
// VerifyRequest). It imports nothing but the standard library, so that a
// receiver written in Go links none of the node: the sender (package
// webhook) and the test receiver (webhook/webhooktest) use it as any
// receiver does. The HTTP API shows payloads with the same Payload.
//
// # The request
//
// Each delivery is one POST of a JSON object (UTF-8) to the configured URL:
//
//	POST /hooks/emails HTTP/1.1
//	Content-Type: application/json
//	User-Agent: orderly-webhook
//	Orderly-Delivery: emails/3/7/1042
//	Orderly-Deadline: 2026-01-01T00:00:30.250Z
//
//	{
//	  "queue": "emails",
//	  "shard": 3,
//	  "jobs": [
//	    {
//	      "id": "user-17",
//	      "retry_count": -1,
//	      "perform_at": 1767225600.25,
//	      "payloads": [
//	        {"payload": {"template":"welcome"}, "score": 1767225600.25,
//	         "headers": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
//	      ]
//	    },
//	    {
//	      "id": "user-42",
//	      "retry_count": 2,
//	      "perform_at": 1767225590,
//	      "error": "smtp: 451 try again later",
//	      "payloads": [
//	        {"payload_base64": "AAEC/w==", "score": 1767225500},
//	        {"payload": "plain text", "score": 1767225510}
//	      ]
//	    }
//	  ]
//	}
//
// (The node sends the object without the indentation.) A receiver decodes
// the body into a Request, with json.Unmarshal or json.Decoder.
//
// Orderly-Delivery (DeliveryHeader) names this delivery attempt as
// "<queue>/<shard>/<epoch>/<seq>". A retry or a redelivery after a crash
// gets a new value: it is meant for logs and tracing, not for deduplicating
// jobs, since the same payload can come again under a new value.
// Orderly-Deadline (DeadlineHeader, read with Deadline) is when the node
// gives the call up; no other call for the same ids starts before it, on
// any node, so a receiver that stops working on a delivery by then never
// overlaps another. The ids of a delivery given up at its deadline are
// retried no earlier than the deadline plus one more timeout, so a
// receiver that overruns its timeout by up to 100% does not overlap their
// retry either (docs/contract.md §2.1).
//
// The fields of a job:
//
//   - id: the job's id. The ids of one request are distinct, and no other
//     delivery holds any of them while this one runs.
//   - retry_count: how many times the job failed so far; -1 for a job that
//     never failed.
//   - perform_at: when the job was due, as unix seconds (a JSON number,
//     possibly fractional).
//   - error: the job's last error; absent when there is none.
//   - payloads: the job's payloads in ascending score order, each with its
//     score (a JSON number) and its headers (an object of strings, absent
//     when it has none; docs/contract.md §10).
//
// # Payloads
//
// A payload's stored bytes appear under exactly one of two names, by one
// rule that the webhook and the HTTP API share (IsCompactJSON):
//
//   - "payload": the stored bytes themselves, byte for byte, when they are
//     compact JSON in valid UTF-8: one JSON value (an object, array,
//     string, number, true, false or null) with no whitespace outside its
//     strings. A JSON writer keeps such bytes as they are (the node's and
//     the HTTP API's do; encoding/json does unless it escapes HTML, which
//     rewrites <, > and & in strings), so the value a reader gets, as
//     json.RawMessage for instance, is the stored bytes.
//   - "payload_base64": the stored bytes in standard base64 (RFC 4648 with
//     padding) otherwise: binary data, text that is not JSON, invalid
//     UTF-8, empty bytes, and JSON with whitespace outside its strings,
//     whose whitespace JSON writers drop.
//
// The HTTP API, the command line and a receiver's emits store a JSON
// payload compact, so only bytes given to the Go client as they are can
// hold such whitespace. The HTTP API stores a missing payload as the JSON
// string "" (sent as "payload": ""), so empty bytes can only come from the
// Go client. Payload.UnmarshalJSON reads either name; a "payload" value
// with whitespace outside its strings is compacted, as the HTTP API does
// when it stores one.
//
// # Stateful queues
//
// For a stateful queue (state: true, docs/contract.md §11) each job also
// carries its id's state and version, before its payloads:
//
//	{"id": "order-42", ..., "state": {"status":"paid"}, "version": 3, "payloads": [...]}
//
// "state" holds the state's bytes by the payload rule, else "state_base64"
// does; an id without state has "state": null and "version": 0, and an id
// whose state was deleted has "state": null, "deleted": true and the
// version the delete left (versions never go back). "timer": true marks a
// job that its timer brought (it may have no payloads: "payloads": []).
// Jobs of other queues carry none of these.
//
// # Signatures
//
// When the queue has a secret, each request carries
//
//	Orderly-Signature: t=1767225600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd
//
// where t is the time of sending in unix seconds and v1 the hex
// HMAC-SHA256, keyed by the secret, of t, a dot and the body as sent
// (Sign). A receiver recomputes it over the raw body (before any
// decoding), compares in constant time and refuses a t too far from its
// clock, which stops a captured request from being replayed later:
// VerifyRequest (or Verify) does it and returns ErrNoSignature,
// ErrBadSignature or ErrSignatureExpired. A retry is signed again, with
// its own t.
//
// A queue may sign with Standard Webhooks instead (SchemeStandard,
// https://www.standardwebhooks.com): Webhook-Id (the delivery's name),
// Webhook-Timestamp (unix seconds) and Webhook-Signature ("v1," and the
// base64 HMAC-SHA256 of "<id>.<timestamp>.<body>", SignStandard), keyed by
// the base64 key of a "whsec_" secret (StandardKey). VerifyRequest
// verifies either scheme, by the headers the request carries;
// VerifyRequestKeys takes several secrets, for a rotation.
//
// # The answer
//
// The receiver answers in one of three ways.
//
// A 2xx status with an empty body (or one of spaces, tabs, CRs and LFs
// only) acknowledges every job of the request:
//
//	HTTP/1.1 204 No Content
//
// A 2xx status with a JSON object (an Answer) whose member is "failed", an
// object mapping ids to error messages, fails those ids and acknowledges
// the others:
//
//	HTTP/1.1 200 OK
//	Content-Type: application/json
//
//	{"failed": {"user-42": "mailbox full"}}
//
// A failed id is handled as if a Go handler had failed it (retried with
// backoff, then moved to the morgue), and its message becomes the job's
// error (an empty message is replaced by a generic one). Ids that are not
// in the request are ignored and logged; {"failed": {}} acknowledges every
// job.
//
// For a stateful queue the object may also hold "state", an object mapping
// ids of the request to their new state, a JSON value, or null to delete it
// (with or without "failed"):
//
//	{"failed": {"order-7": "card declined"}, "state": {"order-42": {"status": "shipped"}, "order-9": null}}
//
// A change is committed in the same atomic step as the acknowledgement of
// its id, so the change of a failed id (here order-7, had it one) is
// dropped. Ids that are not in the request, and "state" on a queue that is
// not stateful, are ignored and logged. The stored state is the value's
// compact JSON. "timers" sets (an RFC 3339 time) or clears (null) the one
// timer of ids of the request, committed the same way:
//
//	{"timers": {"order-42": "2026-01-01T12:00:00Z", "order-9": null}}
//
// At its time the id comes back with its state, "timer": true and the
// payloads that wait for it, if any; a delivery for its payloads before
// then does not clear it. If the state was changed from outside (PUT
// /api/v1/queues/{q}/state/{id}) while the request ran, nothing of it is
// committed for that id, which comes again with the new state. "emit"
// enqueues jobs into any queue (this one included), each on behalf of an
// id of the request named by "from", committed with that id's
// acknowledgement only (the emits of a failed id are dropped with it), then
// relayed into the target queue at least once:
//
//	{"emit": [{"from": "order-42", "queue": "notify", "id": "mail-42",
//	           "payload": {"paid": true}, "perform_in": 60}]}
//
// "payload" is a JSON value (stored compact) or "payload_base64" bytes;
// "score" and "perform_in" (seconds, at most MaxPerformIn) are optional;
// "headers" travel with the emitted payload; "expires_in" (read as
// perform_in) makes it expire that long after the call (docs/contract.md
// §3.15). An emit whose "from" is not an
// id of the request fails the request; one with an invalid queue name or
// job (bad headers included), or more than 1000 emits for one id, fails
// that id; an answer may hold at most MaxEmits. An emit to a queue that was
// never registered is dropped by the relay, which logs an error.
//
// Beside "failed", the object may choose the fate of ids of the request
// (Answer.RetryIn, Dead, Discard): "retry_in" snoozes them (their payloads
// come back after the delay, a number of seconds or a duration string such
// as "10m", their retry count and error unchanged), "dead" sends their
// payloads to the morgue now with the reason, "discard" drops them
// (counted):
//
//	{"retry_in": {"order-1": 30}, "dead": {"order-2": "unknown product"}, "discard": {"order-3": "superseded"}}
//
// Their state, timers and emits are not committed, as for a failed id; ids
// not in the request are ignored and logged. An id in two of "failed",
// "retry_in", "dead" and "discard", or a negative or unreadable delay,
// fails the request.
//
// "result" maps ids of the request to any JSON value, kept (compacted) in
// the id's finished record when it is acknowledged on a queue with
// retain_finished (docs/contract.md §3.14) and dropped otherwise; a failed
// id keeps none, and a result over 64 KiB fails its id:
//
//	{"result": {"order-42": {"receipt": "r-981"}}}
//
// Anything else fails every job of the request, for instance:
//
//	HTTP/1.1 503 Service Unavailable
//
//	database is down
//
// That is: a status other than 2xx (including 3xx: redirects are not
// followed); a 2xx body that is not exactly such an object (an object with
// none of "failed", "retry_in", "dead", "discard", "state", "timers",
// "emit" and "result" or with other members, a
// "failed" that is not an object of strings, a "state" that is not an
// object, trailing data after the object); a body larger than the queue's
// limit (1 MiB by default); no answer by the deadline; a connection error.
//
// A receiver must answer by the deadline (30 s by default). The node also
// gives up on a request when it stops or loses the shard's lease. The jobs
// of a request that was given up on are retried, so a receiver's work
// should be idempotent.
package wire
