// Package web is Orderly's HTTP API: JSON over a persistence.Store.
//
// New returns a Server, an http.Handler; the node serves it on its HTTP
// address with Serve, which adds connection limits and TLS. It serves:
//
//	method and path                                    answer
//	GET    /api/v1/queues                              200 {"queues": [<queue>, ...]}
//	GET    /api/v1/queues/{q}                          200 <queue>
//	POST   /api/v1/queues/{q}/jobs                     202 {"enqueued": n, "duplicates": d}
//	GET    /api/v1/queues/{q}/jobs?order=perform_at|id|retry_count&min=&max=&rev=&limit=&cursor=&payloads=
//	                                                   200 {"jobs": [...], "next": "<cursor>"}
//	GET    /api/v1/queues/{q}/jobs/{id}                200 one job, queued and in flight, with its morgue entry, finished record, state and timer
//	DELETE /api/v1/queues/{q}/jobs/{id}                200 {"deleted": 1}
//	POST   /api/v1/queues/{q}/jobs/{id}/actions/perform_now  200 {"updated": 1}
//	POST   /api/v1/queues/{q}/jobs/{id}/actions/kill   200 {"killed": 1}
//	POST   /api/v1/queues/{q}/jobs/{id}/actions/cancel 200 {"mode": "kill", "killed": 2, "deleted": 0, "in_flight": true}
//	GET    /api/v1/queues/{q}/processing               200 {"batches": [...]}
//	POST   /api/v1/queues/{q}/actions/perform_all_now  200 {"updated": n}
//	POST   /api/v1/queues/{q}/actions/kill_failed      200 {"killed": n}
//	POST   /api/v1/queues/{q}/actions/delete_failed    200 {"deleted": n}
//	POST   /api/v1/queues/{q}/pause                    200 {"paused": true}
//	POST   /api/v1/queues/{q}/resume                   200 {"paused": false}
//	POST   /api/v1/queues/{q}/reshard                  202 {"from", "to", "moved", "left", "drained_shards"}; body {"shards": n}; 409 while another runs
//	POST   /api/v1/node/quiet                          200 {"node": "n1", "quiet": true}
//	POST   /api/v1/node/resume                         200 {"node": "n1", "quiet": false}
//	GET    /api/v1/queues/{q}/morgue?order=id|updated_at&min=&max=&rev=&limit=&cursor=&payloads=
//	                                                   200 {"entries": [...], "next": "<cursor>"}
//	POST   /api/v1/queues/{q}/morgue/requeue           200 {"requeued": n}
//	POST   /api/v1/queues/{q}/morgue/delete            200 {"deleted": n}
//	GET    /api/v1/queues/{q}/finished?order=finished_at|id&min=&max=&rev=&limit=&cursor=   (retain_finished, docs/contract.md §3.14)
//	GET    /api/v1/queues/{q}/state/{id}               200 {"state": ..., "version": n} (stateful queues, Config.StateQueues)
//	PUT    /api/v1/queues/{q}/state/{id}               200 {"version": n}; 409 on a stale version
//	GET    /api/v1/queues/{q}/feed?from=&limit=&wait=   200 {"entries": [{"pos", "id", "version", "state"...}], "next"} (change feed)
//	GET    /api/v1/queues/{q}/history?minutes=         200 {"queue", "minutes": [{"t", "processed", "failed", "length", ...}]} (Config.History)
//	GET    /api/v1/history?minutes=                    200 {"minutes": [...]}: the totals of every queue
//	GET    /api/v1/stats                               200 Lowkiq's stats shape
//	GET    /api/v1/cluster                             200 members and shard owners
//	GET    /api/v1/access                              200 {"write": bool, "token_required": bool}
//	GET    /api/v1/periodic                            200 {"periodic": [{"name", "queue", "schedule", "id", "last_tick", "next_tick"}]}
//	GET    /api/v1/openapi.json                        200 the OpenAPI 3.1 document of the API (package openapi), no token needed
//	GET    /metrics                                    200 Prometheus text (Config.Metrics)
//	GET    /healthz                                    200 {"status": "ok"}
//	GET    /readyz                                     200 {"status": "ready"} or 503
//	GET    / and every other path                      the dashboard (Config.UI)
//
// Both listings take error=<text>: only the entries whose last error
// contains the text (any case) are kept. No index holds error texts, so
// the server reads the listing page by page in the order asked and stops
// after 10,000 entries: a page holds the matches found (at most
// 2×limit−1), "scanned" (the entries read) and a next cursor that goes on
// where the search stopped. order=retry_count&min=0 reads only the jobs
// that failed.
//
// With Config.BasePath ("/orderly") every path above is under it
// (/orderly/api/v1/queues, the dashboard at /orderly/); other paths answer
// 404, but /healthz and /readyz, which also answer at the root.
//
// The OpenAPI document (web/openapi/openapi.yaml) describes each of these
// routes, their parameters, bodies and answers, the pull protocol and the
// webhook request and answer; the package's tests check every request
// they make against it, and that it names every route registered here.
//
// Every GET also answers HEAD. Endpoints without parameters reject any
// query parameter; endpoints without a body (DELETE, the actions) accept
// an empty body or {} only.
//
// # Queues
//
// GET /api/v1/queues lists every queue registered in the store, by name;
// GET /api/v1/queues/{q} answers one (404 with field "queue" when it is
// unknown). A queue and its metrics (docs/contract.md §3.10):
//
//	{"name": "orders", "shards": 8, "length": 3, "fresh": 2, "retries": 1,
//	 "morgue_length": 1, "lag": 5.5, "busy": 1, "processed": 120, "failed": 4,
//	 "oldest_due": 1699999994.5}
//
// length counts queued ids (not those in flight, which busy counts); fresh
// those that never failed (retry_count -1), retries the others; lag is the
// seconds since the earliest perform_at among queued ids (0 when none is
// due); oldest_due is that perform_at, null when nothing is queued;
// processed and failed count settled ids since the queue was created.
//
// # Listings
//
// GET /api/v1/queues/{q}/jobs lists queued jobs (not those in flight) and
// GET /api/v1/queues/{q}/morgue the morgue, a page at a time:
//
//	{"jobs": [{"id": "order-1", "perform_at": 1700000000, "retry_count": -1, "error": "",
//	           "payloads": [{"payload": {"sku": 42}, "score": 1700000000}], "payload_count": 1}],
//	 "next": "YzEAaWQAMAAwAG9yZGVyLTE"}
//	{"entries": [{"id": "order-2", "updated_at": 1700000100, "error": "boom",
//	              "payloads": [{"payload_base64": "AP8=", "score": 1}], "payload_count": 1}],
//	 "next": ""}
//
// Parameters, each at most once; unknown ones are errors:
//
//	order     jobs: perform_at (default), id or retry_count;
//	          morgue: id (default) or updated_at. Ties are broken by id.
//	min, max  inclusive bounds of the order's key: ids for id, numbers
//	          (unix seconds, retry counts) otherwise; empty, -inf or +inf
//	          mean no bound
//	rev       true or 1 for descending order (false, 0 or empty: ascending)
//	limit     page size, 1 to 1000 [100]
//	payloads  payloads shown per entry, the lowest-scored first, 1 to 1000
//	          [10]; payload_count is the total
//	cursor    the next of the previous page, opaque; the other parameters
//	          stay as they were (a cursor of another order or direction
//	          is an error)
//
// next is empty on the last page. A page costs O(log n + limit) per shard
// however deep the cursor, so a queue of millions of jobs pages as fast as
// an empty one; the listing is a live view, not a snapshot: a job that
// changes its key while one pages may be seen twice or not at all.
//
// # Enqueue
//
// The body is a JSON array of jobs:
//
//	[{"id": "order-1", "payload": {"sku": 42}, "score": 1700000000.5, "perform_in": 30},
//	 {"id": "order-2", "payload_base64": "AP8=", "perform_at": 1700003600,
//	  "headers": {"tenant": "acme"}}]
//
// id is required. payload is any JSON value, stored as its compact encoding
// (insignificant whitespace removed, key order kept; null is the value
// null); payload_base64 carries binary in standard base64; with neither the
// payload is the JSON string "" (the two bytes `""`). score is a finite
// number, now when missing. perform_at is unix seconds, perform_in seconds
// from now (>= 0, may be fractional); with neither the job is due now.
// headers is an object of strings carried with the payload (at most 32
// entries and 8 KiB of keys and values, no empty key; null means none;
// docs/contract.md §10); answers show a payload's "headers" only when it
// has some. dedup_key is a string of at most 512 bytes (null or "": none):
// on a queue with a dedup_window, a job whose id was enqueued with the same
// key within the window is acknowledged and not stored; the answer's
// "duplicates" counts them ("enqueued" counts every job of the request;
// docs/contract.md §3.12). priority is an integer from 1 (first) to 4
// (null: 1): among the due ids of a shard, priority 1 goes first, then 2,
// 3, 4; an id's payloads stay in score order (docs/contract.md §3.16);
// answers show "priority" only when it is not 1.
// Times and scores are JSON numbers; null is not "missing" and is rejected.
// Unknown or repeated fields are errors. Validation is all-or-nothing: one
// bad job and nothing is written. An empty array enqueues nothing and
// answers 202 {"enqueued": 0, "duplicates": 0}; an empty body is a 400.
//
// An optional header Orderly-Deadline (apiv1.DeadlineHeader: an RFC 3339
// time, as webhooks carry) bounds when the node may store the request. The
// node checks it on its own clock immediately before the write: at or past
// the deadline it answers 408 with an error naming it, and stores nothing.
// A producer that gives up at that deadline and sends the same payloads
// through another node knows the first request will not be applied later
// (for example after the node it went to was paused); a malformed value is
// a 400 with field "Orderly-Deadline".
//
// Writing is atomic per shard, not per request: the jobs of each shard are
// written by one script, and the shards of a request one after the other.
// So a 5xx answer (500, or 503 when Redis is unreachable or refuses writes:
// out of memory, a read-only replica, a failed snapshot) may come after part
// of the request was stored, and says so. Retrying the same request is
// safe: a payload already stored merges with its copy (for an equal payload
// the lower score wins, docs/contract.md §3.2), so nothing is doubled. (A payload that
// was stored and processed before the retry is processed again: delivery
// is at least once.) A 4xx answer stored nothing.
//
// # Payloads
//
// Wherever the API shows a payload it uses wire.Payload (package
// webhook/wire), the element a webhook receiver gets for the same bytes:
// the stored bytes as a JSON value under "payload" when they are compact
// JSON in valid UTF-8 (wire.IsCompactJSON), else standard base64 under
// "payload_base64"; either way the stored bytes can be recovered exactly
// (docs/contract.md §10). A state is shown by the same rule ("state" or
// "state_base64").
//
// # One job
//
// GET /api/v1/queues/{q}/jobs/{id} takes the id as the rest of the path,
// percent-escaped as needed ("a/b" may be sent as a%2Fb or a/b; "%" as %25;
// an id of "." or ".." must be escaped as %2E). It answers the queued entry
// and, when the id is in flight, its entry of the in-flight batch; on a
// stateful queue also the id's "state" (as GET .../state/{id} shows it, a
// deleted one as {"state": null, "version": n, "deleted": true}) and
// "timer", which outlive its jobs. 404 only when the id has none of these
// (an id whose state was deleted keeps its version, so it is found):
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
// DELETE /api/v1/queues/{q}/jobs/{id} (the id escaped the same way)
// deletes the queued entry of the id with all its payloads and answers
// {"deleted": 1}; 404 when nothing of that id is queued. An in-flight batch
// is never deleted: its handler settles it. (Payloads of the id enqueued
// while it is in flight form a queued entry, which is deleted.)
//
// # Processing
//
// GET /api/v1/queues/{q}/processing answers the in-flight batch of every
// shard that has one, by shard, with the node that fetched it (owner), its
// lease epoch and batch seq, and every payload handed to the handler:
//
//	{"batches": [{"shard": 3, "owner": "node-1", "epoch": 7, "seq": 12, "fetched_at": 1700000000.25,
//	              "jobs": [{"id": "order-1", "perform_at": 1700000000, "retry_count": -1, "error": "",
//	                        "payloads": [{"payload": {"sku": 42}, "score": 1700000000}], "payload_count": 1}]}]}
//
// # Actions
//
// POST /api/v1/queues/{q}/actions/{action}, with an empty body or {}, runs
// a queue action (docs/contract.md §3.9) synchronously and answers how many queued ids
// it changed; in-flight batches are not touched:
//
//	perform_all_now  every queued job due later becomes due now  {"updated": n}
//	                 (perform_at = now; overdue jobs keep theirs)
//	kill_failed      every job with retry_count >= 0 goes to the  {"killed": n}
//	                 morgue with all its payloads and its error
//	delete_failed    every job with retry_count >= 0 is deleted   {"deleted": n}
//
// An unknown action is a 404 with field "action". Each shard changes
// atomically, the queue as a whole does not: jobs enqueued while an action
// runs may or may not be changed.
//
// POST /api/v1/queues/{q}/jobs/{id}/actions/{action} runs an action of one
// job on its queued entry (the id escaped as for GET; the last
// "/actions/" of the path ends it):
//
//	perform_now  the job becomes due now, retry count and  {"updated": 1}
//	             error kept
//	kill         all its queued payloads go to the morgue   {"killed": 1}
//	             with its last error ("killed" if it never failed)
//
// A call in flight for the id is not touched: when nothing of the id is
// queued the answer is 409 if a call holds it, 404 otherwise.
//
// cancel (docs/contract.md §3.13) stops the id everywhere, a call in
// flight included: the body is empty, {} or {"mode": "kill"|"delete"};
// its queued payloads go to the morgue with the error "cancelled" (or are
// dropped), and the node running a call for it cancels that call; the
// call's payloads of the id follow unless it succeeded. It answers the
// mode, the queued payloads killed or deleted and whether a call held the
// id; 404 when the id is neither queued nor in flight.
//
// # Node
//
// POST /api/v1/node/quiet and /resume, with an empty body or {}, make the
// node serving the request quiet (it finishes its batches, releases its
// shards and serves none) or serve again, as SIGTSTP and SIGCONT do; 404
// on a server that runs no node, 503 while the node starts or stops.
//
// # Morgue
//
// POST /api/v1/queues/{q}/morgue/requeue and /morgue/delete take
// {"ids": ["a", "b"]} or {"all": true} (exactly one of the two; {"ids": []}
// selects nothing) and answer {"requeued": n} or {"deleted": n}; ids not in
// the morgue are skipped. A requeued entry merges into the queue with
// perform_at now and retry_count -1 (docs/contract.md §3.2).
//
// # Metrics and dashboard
//
// GET /metrics is served by Config.Metrics (Prometheus text format, not
// JSON); without one it answers 404. It needs the token like every read.
//
// With Config.UI set, GET and HEAD of every path outside /api/, /metrics,
// /healthz and /readyz go to it (other methods there answer 405), without
// the token: the dashboard's files are static and hold no data, and its
// script sends the bearer token on every API call, which needs it as
// always. Without Config.UI those paths answer 404.
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
// # Security
//
// With Config.Token set, every request needs "Authorization: Bearer
// <token>" except the probes and the dashboard's files; with
// Config.PublicReads, GET and HEAD need none, but requests that change
// something always do. Browser requests that change something from another
// origin are rejected (403). The token never appears in logs or answers.
//
// Config.ReadToken is a second token that opens only reads: every GET and
// HEAD of the API, /metrics and the dashboard's views. A request that
// changes state with it gets 403 ("read-only access: ..."). GET
// /api/v1/access answers what the request's credentials allow, so that the
// dashboard hides what it cannot do.
//
// Without a token (or with PublicReads), the server answers only requests
// whose Host header names localhost, a loopback address, the address the
// request arrived on, or one of Config.AllowedHosts ("*": any); others get
// 421. This stops DNS rebinding: a web page whose name is made to resolve
// to 127.0.0.1 sends its own name as Host, and would otherwise read and
// enqueue as a local process. Put the names of a proxy in front in
// AllowedHosts.
//
// A client cannot hold the server's resources by being slow or silent:
//
//	a request body          must arrive within Config.BodyReadTimeout [30 s], else 408
//	bodies in flight        at most Config.MaxBodyBytesInFlight bytes [64 MiB], counted
//	                        as they arrive; a request whose bytes do not fit waits up to
//	                        10 s, then 503
//	enqueue slots           Config.MaxConcurrentEnqueues [64], taken once the body is in
//	a refusal               401, 403, 408, 413 and 421, and any answer sent before the
//	                        body was read, close the connection without reading the rest
//
// Serve adds the connection limits: a request header within
// Config.ReadHeaderTimeout [10 s] (a TLS handshake too), a keep-alive
// connection closed after Config.IdleTimeout [120 s] without a request, and
// at most Config.MaxConnections [1024] open at once. At that limit, the idle
// connection that waited longest among those that never presented the
// token is closed to make room; when there is none, new connections wait
// in the listen queue until one closes, while the connections already open
// keep being served. With Config.TLS, Serve serves HTTPS and HTTP/2.
//
// # Errors
//
// Every answer but /metrics and the dashboard's files is JSON; errors are
// {"error": "...", "field": "..."}, with field only when a field is at
// fault, named as in the request ("jobs[2].perform_at", "limit", "ids[0]",
// "queue", "action"):
//
//	400  malformed JSON ("malformed JSON at byte 17: ..."), bad values,
//	     unknown or repeated parameters, a body where none is taken
//	401  Config.Token is set and the request lacks it
//	403  a cross-origin browser request that changes something; a request
//	     that changes something with Config.ReadToken
//	404  unknown queue, job, action or endpoint; a path that is not canonical
//	405  wrong method (with Allow)
//	408  the body did not arrive within Config.BodyReadTimeout
//	413  body over Config.MaxBodyBytes
//	415  a Content-Type other than JSON (a missing one is accepted)
//	421  a Host this server does not answer to (see Security)
//	500  a store failure (the detail goes to the log, not the answer)
//	503  the store is unreachable or refuses writes, or the server is busy
//	     (with Retry-After)
//
// A 5xx answer to an enqueue may come after part of it was stored (see
// Enqueue): retry the same request.
//
// A queue name that is not valid (letters, digits, '_', '-' and '.') is a
// 400 with field "queue"; a valid one that is not registered a 404.
package web
