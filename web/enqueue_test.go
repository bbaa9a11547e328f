package web_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/webhook/wire"
)

func TestEnqueueLookupRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("POST", "/api/v1/queues/q/jobs", `[
		{"id": "json",   "payload": {"a": 1,  "b":[1, 2]}},
		{"id": "binary", "payload_base64": "AP8QgA=="},
		{"id": "none"},
		{"id": "html",   "payload": "<b>&amp;</b>"},
		{"id": "null",   "payload": null}
	]`, "Content-Type", "application/json; charset=utf-8")
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	require.Equal(t, `{"enqueued":5,"duplicates":0}`+"\n", a.body)

	for id, want := range map[string]string{
		"json":   `{"a":1,"b":[1,2]}`, // compact encoding, key order kept
		"binary": "\x00\xff\x10\x80",
		"none":   `""`, // a missing payload is the JSON string ""
		"html":   `"<b>&amp;</b>"`,
		"null":   `null`,
	} {
		info, err := e.store.GetJob(e.ctx, "q", id)
		require.NoError(t, err)
		require.Len(t, info.Queued.Payloads, 1)
		require.Equal(t, want, string(info.Queued.Payloads[0].Data), id)

		l, raw := e.get(id)
		require.Equal(t, "q", l.Queue)
		require.Equal(t, id, l.ID)
		require.Equal(t, persistence.ShardOf(id, testShards), l.Shard)
		require.False(t, l.InFlight)
		require.Nil(t, l.Processing)
		require.NotNil(t, l.Queued)
		require.Equal(t, []byte(want), l.Queued.Payloads[0].Data, id)
		require.Equal(t, 1, l.Queued.PayloadCount)
		require.Equal(t, -1, l.Queued.RetryCount)
		if id == "binary" {
			require.Contains(t, raw.body, `"payload_base64":"AP8QgA=="`)
		} else {
			require.Contains(t, raw.body, `"payload":`+want+`,`, "JSON payloads appear byte for byte")
		}
	}
}

func TestEnqueueWhitespaceAndEscapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue("\t[ {\"\\u0069d\" :\"esc\" , \"payload\"\n:\r{ \"a\" : \"}]\\\"{[\" , \"b\":[ true,false,null,-1.5e3 ] } } ]\n")
	l, _ := e.get("esc")
	require.Equal(t, `{"a":"}]\"{[","b":[true,false,null,-1.5e3]}`, string(l.Queued.Payloads[0].Data))
}

func TestEnqueueMerge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(`[{"id": "m", "payload": "v1", "score": 1}, {"id": "m", "payload": "v2", "score": 2}]`)
	e.enqueue(`[{"id": "m", "payload": "v2", "score": 3}, {"id": "m", "payload": "v3", "score": 4}]`)
	l, _ := e.get("m")
	require.Equal(t, 3, l.Queued.PayloadCount)
	require.Equal(t, []wire.Payload{
		{Data: []byte(`"v1"`), Score: 1},
		{Data: []byte(`"v2"`), Score: 2}, // the lower score wins
		{Data: []byte(`"v3"`), Score: 4},
	}, l.Queued.Payloads)
	require.Equal(t, persistence.UnixSeconds(t0), l.Queued.PerformAt)
}

func TestEnqueueScoreAndTimes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := persistence.UnixSeconds(t0)
	e.enqueue(`[
		{"id": "default"},
		{"id": "scored", "score": -2.5},
		{"id": "at", "perform_at": 1700000123.5},
		{"id": "in", "perform_in": 90.5},
		{"id": "in0", "perform_in": 0},
		{"id": "epoch", "perform_at": 0},
		{"id": "in-text", "perform_in": "1m30.5s"},
		{"id": "in-text0", "perform_in": "0s"}
	]`)
	for _, c := range []struct {
		id               string
		score, performAt float64
	}{
		{"default", now, now},
		{"scored", -2.5, now},
		{"at", now, 1700000123.5},
		{"in", now, now + 90.5},
		{"in0", now, now},
		{"epoch", now, 0},
		{"in-text", now, now + 90.5},
		{"in-text0", now, now},
	} {
		l, _ := e.get(c.id)
		require.Equal(t, c.score, l.Queued.Payloads[0].Score, c.id)
		require.Equal(t, c.performAt, l.Queued.PerformAt, c.id)
	}
	// perform_in counts from the server's clock.
	e.clock.Advance(10 * time.Second)
	e.enqueue(`[{"id": "later", "perform_in": 5}]`)
	l, _ := e.get("later")
	require.Equal(t, now+15, l.Queued.PerformAt)
}

func TestEnqueueEmptyArray(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("POST", "/api/v1/queues/q/jobs", ` [ ] `)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	require.Equal(t, `{"enqueued":0,"duplicates":0}`+"\n", a.body)

	a = e.do("POST", "/api/v1/queues/nope/jobs", `[]`)
	require.Equal(t, http.StatusNotFound, a.status, a.body)
}

func TestEnqueueAllOrNothing(t *testing.T) {
	t.Parallel()
	empty := `{"total":{"length":0,"morgue_length":0,"lag":0},"by_worker":{"q":{"length":0,"morgue_length":0,"lag":0}}}` + "\n"

	t.Run("rejected by the API", func(t *testing.T) {
		e := newEnv(t)
		a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}, {"id": "b", "score": "high"}, {"id": "c"}]`)
		require.Equal(t, http.StatusBadRequest, a.status, a.body)
		_, field := a.errorBody(t)
		require.Equal(t, "jobs[1].score", field)
		require.Equal(t, empty, e.stats())
	})
	t.Run("rejected by the store", func(t *testing.T) {
		// The store's own limit is lower than the API's: its *FieldError
		// comes back as the API's error, naming the job.
		e := newEnvStore(t, func(s *redisstore.Config) { s.MaxPayloadBytes = 8 })
		a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}, {"id": "b"}, {"id": "c", "payload": "0123456789"}]`)
		require.Equal(t, http.StatusBadRequest, a.status, a.body)
		msg, field := a.errorBody(t)
		require.Equal(t, "jobs[2].payload", field)
		require.Equal(t, "jobs[2].payload: 12 bytes, more than the limit of 8", msg)
		require.Equal(t, empty, e.stats())
	})
}

func TestEnqueueBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) { c.MaxPayloadBytes = 16 })
	long := strings.Repeat("x", persistence.MaxIDBytes+1)
	for _, c := range []struct {
		name, body  string
		contentType string
		status      int
		field       string // "" = no field
		msg         string // a part of the message
	}{
		{name: "malformed JSON", body: `[{"id": "a",}]`, status: 400, msg: "malformed JSON at byte 13: invalid character '}'"},
		{name: "truncated JSON", body: `[{"id": "a"`, status: 400, msg: "malformed JSON at byte 11: unexpected end of JSON input"},
		{name: "trailing garbage", body: `[] x`, status: 400, msg: "malformed JSON at byte 4"},
		{name: "empty body", body: ``, status: 400, msg: "the request body is empty: send a JSON array of jobs"},
		{name: "blank body", body: " \n", status: 400, msg: "the request body is empty"},
		{name: "object, not an array", body: `{"id": "a"}`, status: 400, field: "jobs", msg: "jobs: must be a JSON array of jobs, got an object"},
		{name: "null body", body: `null`, status: 400, field: "jobs", msg: "got null"},
		{name: "job not an object", body: `[{"id": "a"}, "b"]`, status: 400, field: "jobs[1]", msg: "jobs[1]: must be a JSON object, got a string"},
		{name: "missing id", body: `[{"payload": 1}]`, status: 400, field: "jobs[0].id", msg: "jobs[0].id: required"},
		{name: "empty id", body: `[{"id": ""}]`, status: 400, field: "jobs[0].id", msg: "must not be empty"},
		{name: "numeric id", body: `[{"id": 42}]`, status: 400, field: "jobs[0].id", msg: "must be a string, got a number"},
		{name: "513-byte id", body: `[{"id": "` + long + `"}]`, status: 400, field: "jobs[0].id", msg: "longer than 512 bytes"},
		{name: "invalid UTF-8 id", body: "[{\"id\": \"a\xffb\"}]", status: 400, field: "jobs[0].id", msg: "not valid UTF-8"},
		{name: "unpaired surrogate id", body: `[{"id": "a\ud800b"}]`, status: 400, field: "jobs[0].id", msg: "not valid UTF-8"},
		{name: "lone low surrogate id", body: `[{"id": "\udc00"}]`, status: 400, field: "jobs[0].id", msg: "not valid UTF-8"},
		{name: "unknown queue", body: `[{"id": "a"}]`, status: 404, field: "queue", msg: `unknown queue "nope"`},
		{name: "payload over the limit", body: `[{"id": "a", "payload": "0123456789abcdef"}]`, status: 400, field: "jobs[0].payload", msg: "18 bytes, more than the limit of 16"},
		{name: "payload_base64 over the limit", body: `[{"id": "a", "payload_base64": "` + strings.Repeat("AAAA", 6) + `"}]`, status: 400, field: "jobs[0].payload_base64", msg: "18 bytes, more than the limit of 16"},
		{name: "score overflows", body: `[{"id": "a", "score": 1e999}]`, status: 400, field: "jobs[0].score", msg: "must be a finite number"},
		{name: "score overflows negative", body: `[{"id": "a", "score": -1e999}]`, status: 400, field: "jobs[0].score", msg: "must be a finite number"},
		{name: "score as string", body: `[{"id": "a", "score": "1"}]`, status: 400, field: "jobs[0].score", msg: "must be a number, got a string"},
		{name: "score null", body: `[{"id": "a", "score": null}]`, status: 400, field: "jobs[0].score", msg: "must be a number, got null"},
		{name: "perform_at overflows", body: `[{"id": "a", "perform_at": 1e999}]`, status: 400, field: "jobs[0].perform_at", msg: "must be a finite number"},
		{name: "perform_at not a number", body: `[{"id": "a", "perform_at": "tomorrow"}]`, status: 400, field: "jobs[0].perform_at", msg: "must be a number, got a string"},
		{name: "perform_at negative", body: `[{"id": "a", "perform_at": -1}]`, status: 400, field: "jobs[0].perform_at", msg: "out of range"},
		{name: "perform_at too late", body: `[{"id": "a", "perform_at": 1e11}]`, status: 400, field: "jobs[0].perform_at", msg: "out of range"},
		{name: "perform_in overflows", body: `[{"id": "a", "perform_in": 1e999}]`, status: 400, field: "jobs[0].perform_in", msg: "must be a finite number"},
		{name: "perform_in not a duration", body: `[{"id": "a", "perform_in": "5 minutes"}]`, status: 400, field: "jobs[0].perform_in", msg: `"5 minutes" is not a duration such as "90s"`},
		{name: "perform_in bare number string", body: `[{"id": "a", "perform_in": "90"}]`, status: 400, field: "jobs[0].perform_in", msg: `"90" is not a duration`},
		{name: "perform_in negative duration", body: `[{"id": "a", "perform_in": "-1s"}]`, status: 400, field: "jobs[0].perform_in", msg: "must not be negative"},
		{name: "perform_in boolean", body: `[{"id": "a", "perform_in": true}]`, status: 400, field: "jobs[0].perform_in", msg: "must be a number of seconds or a duration string such as \"90s\", got a boolean"},
		{name: "perform_in negative", body: `[{"id": "a", "perform_in": -0.5}]`, status: 400, field: "jobs[0].perform_in", msg: "must not be negative"},
		{name: "perform_in too far", body: `[{"id": "a", "perform_in": 1e12}]`, status: 400, field: "jobs[0].perform_in", msg: "out of range"},
		{name: "payload and payload_base64", body: `[{"id": "a", "payload": 1, "payload_base64": "AA=="}]`, status: 400, field: "jobs[0].payload_base64", msg: "give payload or payload_base64, not both"},
		{name: "perform_at and perform_in", body: `[{"id": "a", "perform_at": 1, "perform_in": 1}]`, status: 400, field: "jobs[0].perform_in", msg: "give perform_at or perform_in, not both"},
		{name: "perform_in and perform_at", body: `[{"id": "a", "perform_in": 1, "perform_at": 1}]`, status: 400, field: "jobs[0].perform_in", msg: "not both"},
		{name: "unknown field", body: `[{"id": "a"}, {"id": "b"}, {"id": "c", "prioritty": 1}]`, status: 400, field: "jobs[2].prioritty", msg: "jobs[2].prioritty: unknown field"},
		{name: "field names are exact", body: `[{"ID": "a"}]`, status: 400, field: "jobs[0].ID", msg: "unknown field"},
		{name: "repeated field", body: `[{"id": "a", "id": "b"}]`, status: 400, field: "jobs[0].id", msg: "given more than once"},
		{name: "repeated field, escaped", body: `[{"id": "a", "\u0069d": "b"}]`, status: 400, field: "jobs[0].id", msg: "given more than once"},
		{name: "unknown field, bad escape", body: `[{"id": "a", "\udc00": 1}]`, status: 400, field: `jobs[0].\udc00`, msg: "unknown field"},
		{name: "bad base64", body: `[{"id": "a", "payload_base64": "not base64!"}]`, status: 400, field: "jobs[0].payload_base64", msg: "not valid standard base64"},
		{name: "unpadded base64", body: `[{"id": "a", "payload_base64": "AP8"}]`, status: 400, field: "jobs[0].payload_base64", msg: "not valid standard base64"},
		{name: "URL base64", body: `[{"id": "a", "payload_base64": "-_8="}]`, status: 400, field: "jobs[0].payload_base64", msg: "not valid standard base64"},
		{name: "payload_base64 not a string", body: `[{"id": "a", "payload_base64": [0]}]`, status: 400, field: "jobs[0].payload_base64", msg: "must be a string, got an array"},
		{name: "text/plain", body: `[{"id": "a"}]`, contentType: "text/plain", status: 415, msg: `unsupported Content-Type "text/plain"`},
		{name: "form", body: `id=a`, contentType: "application/x-www-form-urlencoded", status: 415},
		{name: "not UTF-8", body: `[{"id": "a"}]`, contentType: "application/json; charset=latin1", status: 415},
		{name: "bad Content-Type", body: `[{"id": "a"}]`, contentType: "application/json; =", status: 415},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := "/api/v1/queues/q/jobs"
			if c.status == http.StatusNotFound {
				path = "/api/v1/queues/nope/jobs"
			}
			var headers []string
			if c.contentType != "" {
				headers = []string{"Content-Type", c.contentType}
			}
			a := e.do("POST", path, c.body, headers...)
			require.Equal(t, c.status, a.status, a.body)
			msg, field := a.errorBody(t)
			require.Equal(t, c.field, field, a.body)
			require.Contains(t, msg, c.msg)
		})
	}
	require.Contains(t, e.stats(), `"total":{"length":0,`, "nothing was written")
}

func TestEnqueueAcceptedEdges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) { c.MaxPayloadBytes = 16 })
	id512 := strings.Repeat("é", persistence.MaxIDBytes/2) // 512 bytes
	e.enqueue(`[
		{"id": "`+id512+`"},
		{"id": "\ud83d\ude00 \u00e9\/"},
		{"id": "limit", "payload": "01234567890123"},
		{"id": "b64", "payload_base64": "AAAAAAAAAAAAAAAAAAAAAA=="},
		{"id": "tiny", "score": 1e-999}
	]`, "Content-Type", "application/vnd.orderly+json")
	_, _ = e.get(id512)
	l, _ := e.get("😀 é/")
	require.Equal(t, "😀 é/", l.ID)
	l, _ = e.get("limit")
	require.Len(t, l.Queued.Payloads[0].Data, 16)
	l, _ = e.get("tiny")
	require.Equal(t, 0.0, l.Queued.Payloads[0].Score)
}

func TestEnqueueBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) { c.MaxBodyBytes = 1024 })
	big := `[{"id": "a", "payload": "` + strings.Repeat("x", 2000) + `"}]`

	a := e.do("POST", "/api/v1/queues/q/jobs", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status, a.body)
	msg, field := a.errorBody(t)
	require.Equal(t, "request body is larger than the limit of 1024 bytes", msg)
	require.Empty(t, field)

	// Without a Content-Length (chunked), the limit applies while reading.
	req, err := http.NewRequest("POST", e.ts.URL+"/api/v1/queues/q/jobs", io.NopCloser(strings.NewReader(big)))
	require.NoError(t, err)
	require.EqualValues(t, 0, req.ContentLength)
	a = e.send(req)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status, a.body)

	// A body at the limit is read.
	prefix, suffix := `[{"id": "a", "payload": "`, `"}]`
	exact := prefix + strings.Repeat("x", 1024-len(prefix)-len(suffix)) + suffix
	require.Len(t, exact, 1024)
	a = e.do("POST", "/api/v1/queues/q/jobs", exact)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
}

func TestEnqueueLargeBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var b strings.Builder
	b.WriteString("[")
	for i := range 2500 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id": "job-%d", "payload": {"n": %d}}`, i%2000, i)
	}
	b.WriteString("]")
	a := e.do("POST", "/api/v1/queues/q/jobs", b.String())
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	require.Equal(t, `{"enqueued":2500,"duplicates":0}`+"\n", a.body)
	require.Contains(t, e.stats(), `"total":{"length":2000,`)
	l, _ := e.get("job-7")
	require.Equal(t, 2, l.Queued.PayloadCount)
}

// redisError is an error of the Redis server, as go-redis returns them.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

// refusingStore writes nothing: its Enqueue fails with err.
type refusingStore struct {
	persistence.Store
	err error
}

func (s refusingStore) Enqueue(context.Context, string, []persistence.NewJob) error {
	return fmt.Errorf("redisstore: enqueue: %w", s.err)
}

// An enqueue is written shard by shard, so a 5xx may come after part of it
// was stored: the answer says so, and that a retry is safe. A Redis that
// answers but refuses writes is a 503, like one that is unreachable.
func TestEnqueueServerErrorsMayBePartial(t *testing.T) {
	t.Parallel()
	const partial = "; part of the request may have been stored: retrying the same request is safe, as a payload already stored merges with its copy"
	for _, tc := range []struct {
		err    error
		status int
		msg    string
	}{
		{redisError("OOM command not allowed when used memory > 'maxmemory'."), 503, "store unavailable; retry later" + partial},
		{redisError("READONLY You can't write against a read only replica."), 503, "store unavailable; retry later" + partial},
		{redisError("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk."), 503, "store unavailable; retry later" + partial},
		{fmt.Errorf("redisstore: enqueue to q: %w: 0 of 1 replicas acknowledged the write", persistence.ErrNotReplicated), 503,
			"not replicated: too few Redis replicas acknowledged the write in time; retry later" + partial},
		{errors.New("a bug"), 500, "internal error; the server log has the details" + partial},
	} {
		refusing := newEnv(t, func(c *web.Config) { c.Store = refusingStore{err: tc.err} })
		a := refusing.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}]`, "Content-Type", "application/json")
		require.Equal(t, tc.status, a.status, a.body)
		msg, _ := a.errorBody(t)
		require.Equal(t, tc.msg, msg)
	}
	// A 4xx stored nothing, and says nothing of a partial write.
	e := newEnv(t)
	a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}, {"id": ""}]`, "Content-Type", "application/json")
	require.Equal(t, http.StatusBadRequest, a.status)
	require.NotContains(t, a.body, "part of the request")
}
