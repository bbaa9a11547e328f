// Package webhook handles a queue with an HTTP endpoint instead of Go code,
// so that workers can be written in any language. New returns an
// orderly.HandlerFunc that POSTs each batch to a URL and turns the answer
// into the batch's outcome.
//
// # The request
//
// Each delivery is one POST of a JSON object (UTF-8) to the configured URL:
//
//	POST /hooks/emails HTTP/1.1
//	Content-Type: application/json
//	User-Agent: orderly-webhook
//	Orderly-Delivery: emails/3/7/1042
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
//	        {"payload": {"template": "welcome"}, "score": 1767225600.25,
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
// (The node sends the object without the indentation.)
//
// A receiver written in Go decodes the body into a Request, with
// json.Unmarshal or json.Decoder. Bodies of a queue that is not stateful
// are decoded in one pass, without reflection; a receiver that reads the
// body itself and calls Request.UnmarshalJSON on it also skips the passes
// that encoding/json makes over the body before it (BenchmarkCall measures
// a call end to end).
//
// Orderly-Delivery names this delivery attempt as
// "<queue>/<shard>/<epoch>/<seq>". A retry or a redelivery after a crash
// gets a new value: it is meant for logs and tracing, not for deduplicating
// jobs, since the same payload can come again under a new value.
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
//     score (a JSON number).
//
// A payload carries exactly one of:
//
//   - payload: the stored bytes as they are, when they are valid JSON in
//     valid UTF-8 (an object, array, string, number, true, false or null).
//     They are embedded byte for byte, whitespace included.
//   - payload_base64: the stored bytes in standard base64 (RFC 4648 with
//     padding) otherwise, e.g. binary data, text that is not JSON, invalid
//     UTF-8.
//
// For a stateful queue (state: true, docs/contract.md §11) each job also
// carries its id's state and version, before its payloads:
//
//	{"id": "order-42", ..., "state": {"status": "paid"}, "version": 3, "payloads": [...]}
//
// "state" is the state as a JSON value when its bytes are one, else
// "state_base64" holds them; an id without state has "state": null and
// "version": 0, and an id whose state was deleted has "state": null,
// "deleted": true and the version the delete left (versions never go
// back). "timer": true marks a job that its timer brought (it may
// have no payloads: "payloads": []). Jobs of other queues carry none of
// these.
//
// An empty payload (zero bytes) is not valid JSON and is sent as
// "payload_base64": "". The HTTP API stores a missing payload as the JSON
// string "" (sent as "payload": ""), so an empty payload can only come from
// the Go client.
//
// Extra headers from Config.Header (for instance Authorization) are sent
// with every request. Credentials in the URL's userinfo are sent as basic
// authentication.
//
// # Signatures
//
// With Config.Secret set (handler.secret in the configuration file), each
// request carries
//
//	Orderly-Signature: t=1767225600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd
//
// where t is the time of sending in unix seconds and v1 the hex HMAC-SHA256,
// keyed by the secret, of t, a dot and the body as sent. A receiver
// recomputes it over the raw body (before any decoding), compares in
// constant time and refuses a t too far from its clock, which stops a
// captured request from being replayed later. In Go, VerifyRequest (or
// Verify) does it and returns ErrNoSignature, ErrBadSignature or
// ErrSignatureExpired. A retry is signed again, with its own t.
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
// A 2xx status with a JSON object whose member is "failed", an object
// mapping ids to error messages, fails those ids and acknowledges the
// others:
//
//	HTTP/1.1 200 OK
//	Content-Type: application/json
//
//	{"failed": {"user-42": "mailbox full"}}
//
// A failed id is handled as if a Go handler had failed it (retried with
// backoff, then moved to the morgue), and its message becomes the job's
// error (an empty message is replaced by a generic one). Ids that are not in
// the request are ignored, and logged in one warning per answer with their
// count and the first ten of them; {"failed": {}} acknowledges every job.
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
// payloads that wait for it, if any; a delivery for its payloads before then
// does not clear it. If the state was changed from outside (PUT
// /api/v1/queues/{q}/state/{id}) while the request ran, nothing of it is
// committed for that id, which comes again with the new state. "emit" enqueues
// jobs into any queue (this one included), each on behalf of an id of the
// request named by "from", committed with that id's acknowledgement only
// (the emits of a failed id are dropped with it), then relayed into the
// target queue at least once:
//
//	{"emit": [{"from": "order-42", "queue": "notify", "id": "mail-42",
//	           "payload": {"paid": true}, "perform_in": 60}]}
//
// "payload" is a JSON value (stored compact) or "payload_base64" bytes;
// "score" and "perform_in" (seconds) are optional. An emit whose "from" is
// not an id of the request fails the request; "headers" travel with the
// emitted payload; one with an invalid queue name or job (bad headers
// included), or more than 1000 emits for one id fails that id. An emit to a queue that was never registered is dropped
// by the relay, which logs an error.
//
// Anything else fails every job of the request, for instance:
//
//	HTTP/1.1 503 Service Unavailable
//
//	database is down
//
// That is: a status other than 2xx (including 3xx: the default client does
// not follow redirects); a 2xx body that is not exactly such an object (an
// object with neither "failed" nor "state" or with other members, a
// "failed" that is not an object of strings, a "state" that is not an
// object, trailing data after the object); a body larger than
// Config.MaxResponseBytes; no answer within Config.Timeout; a connection
// error. The batch's error says which: the status and the first 4 KiB of the
// body, the timeout, or the connection error.
//
// A receiver must answer within Config.Timeout (30s by default). The node
// also gives up on a request when it stops or loses the shard's lease. The
// jobs of a request that was given up on are retried, so a receiver's work
// should be idempotent.
//
// # Connections
//
// With the handler's own client (Config.Client nil), a request to an
// http:// URL that no proxy serves (HTTP_PROXY, NO_PROXY) is sent on the
// calling goroutine: HTTP/1.1, the request's head and body in one write, over
// a pool of kept-alive connections (at most 32 idle, each for at most 90
// s; dialing times out after 10 s). The call's deadline is the connection's,
// and the call's end (the node stopping, the lease lost) interrupts the
// dial, the write or the read at once; a connection whose call was
// interrupted is closed, never reused. A connection the receiver closed
// while it was idle is found before a request is written on it (a
// non-blocking look at the socket) and replaced by a new one. The answer's
// status line and headers may take 64 KiB; 1xx answers before the final one
// are skipped; the body may be delimited by Content-Length, chunked encoding
// or the end of the connection, and the connection is reused when the answer
// allows it and its end was read (up to 64 KiB past what the handler reads
// is drained for that).
//
// An https:// URL (TLS, and HTTP/2 when the receiver offers it), a proxy from
// the environment, static headers that net/http writes its own way (Host,
// Connection, framing headers) or refuses, and any Config.Client go through
// net/http, with the same limits for the handler's own client. No client
// follows redirects unless Config.Client does.
//
// # Secrets
//
// Errors and logs name the URL without its userinfo, query string and
// fragment, and never include request headers.
package webhook
