// Package web is Orderly's HTTP API: JSON over a persistence.Store.
//
// New returns a Server, an http.Handler; the node mounts it on its HTTP
// address. This first part serves:
//
//	method and path                              answer
//	POST /api/v1/queues/{q}/jobs                 202 {"enqueued": n}
//	GET  /api/v1/queues/{q}/jobs/{id}            200 one job, queued and in flight
//	GET  /api/v1/queues/{q}/morgue?order=id|updated_at&min=&max=&rev=&limit=&cursor=&payloads=
//	                                             200 {"entries": [...], "next": "<cursor>"}
//	POST /api/v1/queues/{q}/morgue/requeue       200 {"requeued": n}
//	GET  /api/v1/stats                           200 Lowkiq's stats shape
//	GET  /healthz                                200 {"status": "ok"}
//	GET  /readyz                                 200 {"status": "ready"} or 503
//
// # Enqueue
//
// The body is a JSON array of jobs:
//
//	[{"id": "order-1", "payload": {"sku": 42}, "score": 1700000000.5, "perform_in": 30},
//	 {"id": "order-2", "payload_base64": "AP8=", "perform_at": 1700003600}]
//
// id is required. payload is any JSON value, stored as its compact encoding
// (insignificant whitespace removed, key order kept; null is the value
// null); payload_base64 carries binary in standard base64; with neither the
// payload is the JSON string "" (the two bytes `""`). score is a finite
// number, now when missing. perform_at is unix seconds, perform_in seconds
// from now (>= 0, may be fractional); with neither the job is due now.
// Times and scores are JSON numbers; null is not "missing" and is rejected.
// Unknown or repeated fields are errors. Validation is all-or-nothing: one
// bad job and nothing is written. An empty array enqueues nothing and
// answers 202 {"enqueued": 0}; an empty body is a 400.
//
// # Payloads
//
// Wherever the API shows a payload it uses Payload: the stored bytes as a
// JSON value under "payload" when they are valid, compact UTF-8 JSON, else
// standard base64 under "payload_base64"; either way the stored bytes can be
// recovered exactly.
//
// # One job
//
// GET /api/v1/queues/{q}/jobs/{id} takes the id as the rest of the path,
// percent-escaped as needed ("a/b" may be sent as a%2Fb or a/b; "%" as %25;
// an id of "." or ".." must be escaped as %2E). It answers the queued entry
// and, when the id is in flight, its entry of the in-flight batch; 404 only
// when there is neither:
//
//	{"queue": "orders", "shard": 3, "id": "order-1", "in_flight": true,
//	 "queued": {"perform_at": 1700000000, "retry_count": -1, "error": "",
//	            "payloads": [{"payload": {"sku": 43}, "score": 1700000001}], "payload_count": 1},
//	 "processing": {"perform_at": 1700000000, "retry_count": -1, "error": "",
//	                "payloads": [{"payload": {"sku": 42}, "score": 1700000000}], "payload_count": 1,
//	                "owner": "node-1", "epoch": 7, "seq": 12, "fetched_at": 1700000000.25}}
//
// "queued" and "processing" are null when absent. Times are unix seconds.
//
// # Stats
//
// GET /api/v1/stats has Lowkiq's shape, so Lowkiq scrapers keep working:
//
//	{"total": {"length": 3, "morgue_length": 1, "lag": 5.5},
//	 "by_worker": {"orders": {"length": 3, "morgue_length": 1, "lag": 5.5}}}
//
// by_worker has every queue registered in the store; the total lag is the
// maximum over queues, the other totals are sums.
//
// # Errors
//
// Every answer is JSON; errors are {"error": "...", "field": "..."}, with
// field only when a field is at fault, named as in the request
// ("jobs[2].perform_at", "limit", "ids[0]", "queue"):
//
//	400  malformed JSON ("malformed JSON at byte 17: ..."), bad values
//	401  Config.Token is set and the request lacks it
//	403  a cross-origin browser request that changes something
//	404  unknown queue, job or endpoint; a path that is not canonical
//	405  wrong method (with Allow)
//	413  body over Config.MaxBodyBytes
//	415  a Content-Type other than JSON (a missing one is accepted)
//	500  a store failure (the detail goes to the log, not the answer)
//	503  the store is unreachable (with Retry-After)
package web
