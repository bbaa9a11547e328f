package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// received is one request as the test receiver saw it.
type received struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// receiver is a test endpoint: it records requests and answers with answer.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []received
}

// newReceiver starts a receiver on 127.0.0.1:0, closed when the test ends.
func newReceiver(t *testing.T, answer http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		r.mu.Lock()
		r.requests = append(r.requests, received{
			Method: req.Method,
			Path:   req.URL.Path,
			Query:  req.URL.RawQuery,
			Header: req.Header.Clone(),
			Body:   body,
		})
		r.mu.Unlock()
		answer(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// last returns the last request received.
func (r *receiver) last(t *testing.T) received {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.requests, "the receiver got no request")
	return r.requests[len(r.requests)-1]
}

// answerWith answers with a status and a body.
func answerWith(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// waitForCancel answers only when the client goes away.
func waitForCancel(_ http.ResponseWriter, req *http.Request) {
	<-req.Context().Done()
}

// newTestSender returns a sender for cfg whose idle connections are closed
// when the test ends (for goleak).
func newTestSender(t *testing.T, cfg *Config) *Sender {
	t.Helper()
	s, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// logBuffer returns a logger that writes JSON lines to the returned buffer.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewJSONHandler(&buf, nil)), &buf
}

// logLines decodes the JSON lines of a log buffer.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	dec := json.NewDecoder(buf)
	for dec.More() {
		var line map[string]any
		require.NoError(t, dec.Decode(&line))
		lines = append(lines, line)
	}
	return lines
}

// testBatch returns a batch with the given ids, one JSON payload each.
func testBatch(ids ...string) *orderly.Batch {
	b := &orderly.Batch{Queue: "emails", Shard: 3, Delivery: "emails/3/7/1042"}
	for i, id := range ids {
		b.Jobs = append(b.Jobs, orderly.Job{
			ID:         id,
			RetryCount: -1,
			PerformAt:  time.Unix(1767225600+int64(i), 0),
			Payloads:   []orderly.Payload{{Data: []byte(`{"n":1}`), Score: 1}},
		})
	}
	return b
}

// The wire types of a request, decoded strictly by the tests.
type (
	wireBatch struct {
		Queue string    `json:"queue"`
		Shard int       `json:"shard"`
		Jobs  []wireJob `json:"jobs"`
	}
	wireJob struct {
		ID         string        `json:"id"`
		RetryCount int           `json:"retry_count"`
		PerformAt  float64       `json:"perform_at"`
		Error      *string       `json:"error"`
		Payloads   []wirePayload `json:"payloads"`
	}
	wirePayload struct {
		Payload       json.RawMessage   `json:"payload"`
		PayloadBase64 *string           `json:"payload_base64"`
		Score         float64           `json:"score"`
		Headers       map[string]string `json:"headers"`
	}
)

func ptr[T any](v T) *T { return &v }

func TestRequestBody(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answerWith(http.StatusNoContent, ""))
	s := newTestSender(t, &Config{URL: rcv.srv.URL + "/hook"})

	oddJSON := []byte("{ \"to\" :\t\"a@b.c\" ,\n  \"tags\": [ 1 ,2 ] }")
	batch := &orderly.Batch{
		Queue:    "emails",
		Shard:    3,
		Delivery: "emails/3/7/1042",
		Jobs: []orderly.Job{
			{
				ID:         "user-17",
				RetryCount: -1,
				PerformAt:  time.Unix(1767225600, 250_000_000),
				Payloads: []orderly.Payload{
					{Data: []byte(`{"template":"welcome"}`), Score: 1767225600.25},
					{Data: oddJSON, Score: 2, Headers: map[string]string{"traceparent": "00-ab-cd-01", "tenant": "<acme>"}},
					{Data: []byte(`"plain text"`), Score: 3, Headers: map[string]string{}},
					{Data: []byte(`null`), Score: 4},
					{Data: []byte(`-12.5e3`), Score: 5},
				},
			},
			{
				ID:         "user-42",
				RetryCount: 2,
				PerformAt:  time.Unix(1767225590, 0),
				Error:      "smtp: 451 try again later",
				Payloads: []orderly.Payload{
					{Data: []byte{0x00, 0x01, 0x02, 0xff}, Score: -1},     // binary
					{Data: []byte("caf\xe9"), Score: 0},                   // invalid UTF-8, not JSON
					{Data: []byte("\"caf\xe9\""), Score: 0.5},             // JSON per json.Valid, invalid UTF-8
					{Data: []byte{}, Score: 6},                            // empty
					{Data: []byte("not json"), Score: 7},                  // text
					{Data: []byte(`{"a":1} trailing`), Score: 8},          // JSON with trailing data
					{Data: []byte(" \n[1, 2]\t"), Score: 9},               // JSON with outer whitespace
					{Data: []byte(`"<script>&amp;</script>"`), Score: 10}, // no HTML escaping
				},
			},
			{ID: "empty", RetryCount: 0, Payloads: nil},
		},
	}

	require.NoError(t, s.Handle(context.Background(), batch))

	got := rcv.last(t)
	dec := json.NewDecoder(bytes.NewReader(got.Body))
	dec.DisallowUnknownFields()
	var sent wireBatch
	require.NoError(t, dec.Decode(&sent))
	require.True(t, utf8.Valid(got.Body), "the body must be valid UTF-8")

	want := wireBatch{
		Queue: "emails",
		Shard: 3,
		Jobs: []wireJob{
			{
				ID:         "user-17",
				RetryCount: -1,
				PerformAt:  1767225600.25,
				Payloads: []wirePayload{
					{Payload: json.RawMessage(`{"template":"welcome"}`), Score: 1767225600.25},
					{PayloadBase64: ptr(base64.StdEncoding.EncodeToString(oddJSON)), Score: 2, Headers: map[string]string{"traceparent": "00-ab-cd-01", "tenant": "<acme>"}},
					{Payload: json.RawMessage(`"plain text"`), Score: 3},
					{Payload: json.RawMessage(`null`), Score: 4},
					{Payload: json.RawMessage(`-12.5e3`), Score: 5},
				},
			},
			{
				ID:         "user-42",
				RetryCount: 2,
				PerformAt:  1767225590,
				Error:      ptr("smtp: 451 try again later"),
				Payloads: []wirePayload{
					{PayloadBase64: ptr("AAEC/w=="), Score: -1},
					{PayloadBase64: ptr("Y2Fm6Q=="), Score: 0},
					{PayloadBase64: ptr("ImNhZuki"), Score: 0.5},
					{PayloadBase64: ptr(""), Score: 6},
					{PayloadBase64: ptr("bm90IGpzb24="), Score: 7},
					{PayloadBase64: ptr("eyJhIjoxfSB0cmFpbGluZw=="), Score: 8},
					{PayloadBase64: ptr(base64.StdEncoding.EncodeToString([]byte(" \n[1, 2]\t"))), Score: 9},
					{Payload: json.RawMessage(`"<script>&amp;</script>"`), Score: 10},
				},
			},
			{ID: "empty", RetryCount: 0, PerformAt: 0, Payloads: []wirePayload{}},
		},
	}
	require.Equal(t, want, sent)

	// Compact JSON payloads are embedded byte for byte; JSON with
	// whitespace outside its strings goes in base64 (wire.IsCompactJSON).
	for _, p := range [][]byte{[]byte(`{"template":"welcome"}`), []byte(`-12.5e3`), []byte(`"<script>&amp;</script>"`)} {
		embedded := append(append([]byte(`"payload":`), p...), `,"score":`...)
		require.True(t, bytes.Contains(got.Body, embedded), "payload %q is not embedded as is", p)
	}
	// Headers (docs/contract.md §10) follow the score, keys sorted, and are
	// absent from payloads without any.
	require.True(t, bytes.Contains(got.Body, []byte(`,"score":2,"headers":{"tenant":"\u003cacme\u003e","traceparent":"00-ab-cd-01"}}`)), "%s", got.Body)
	require.Equal(t, 1, bytes.Count(got.Body, []byte(`"headers"`)))
	// Each payload has exactly one of payload and payload_base64.
	for _, j := range sent.Jobs {
		for _, p := range j.Payloads {
			require.True(t, (p.Payload == nil) != (p.PayloadBase64 == nil), "payload %+v", p)
		}
	}
}

func TestRequestBodyRejectsNaN(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answerWith(http.StatusNoContent, ""))
	s := newTestSender(t, &Config{URL: rcv.srv.URL})
	b := testBatch("a")
	b.Jobs[0].Payloads[0].Score = math.NaN()

	err := s.Handle(context.Background(), b)
	require.ErrorContains(t, err, `webhook: encoding the request: wire: job "a": score`)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	require.Empty(t, rcv.requests, "nothing is sent for a batch that cannot be encoded")
}

func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answerWith(http.StatusOK, ""))
	header := http.Header{}
	header.Set("Authorization", "Bearer s3cret")
	header.Add("X-Tenant", "a")
	header.Add("X-Tenant", "b")
	header["x-lowercase"] = []string{"yes"}
	header.Set("Content-Type", "text/plain")       // overridden
	header.Set("Orderly-Delivery", "forged/0/0/0") // overridden
	s := newTestSender(t, &Config{URL: rcv.srv.URL + "/hooks/emails?token=abc", Header: header})
	header.Set("X-Tenant", "changed after New") // the handler keeps a copy

	require.NoError(t, s.Handle(context.Background(), testBatch("a")))

	got := rcv.last(t)
	require.Equal(t, http.MethodPost, got.Method)
	require.Equal(t, "/hooks/emails", got.Path)
	require.Equal(t, "token=abc", got.Query)
	require.Equal(t, []string{"emails/3/7/1042"}, got.Header.Values("Orderly-Delivery"))
	require.Equal(t, []string{"application/json"}, got.Header.Values("Content-Type"))
	require.Equal(t, []string{"orderly-webhook"}, got.Header.Values("User-Agent"))
	require.Equal(t, []string{"Bearer s3cret"}, got.Header.Values("Authorization"))
	require.Equal(t, []string{"a", "b"}, got.Header.Values("X-Tenant"))
	require.Equal(t, []string{"yes"}, got.Header.Values("X-Lowercase"))
}

func TestBasicAuthFromURL(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answerWith(http.StatusOK, ""))
	u := strings.Replace(rcv.srv.URL, "http://", "http://user:pa55@", 1)
	s := newTestSender(t, &Config{URL: u})

	require.NoError(t, s.Handle(context.Background(), testBatch("a")))

	req, err := http.NewRequest(http.MethodGet, "/", nil)
	require.NoError(t, err)
	req.Header = rcv.last(t).Header
	user, pass, ok := req.BasicAuth()
	require.True(t, ok)
	require.Equal(t, "user", user)
	require.Equal(t, "pa55", pass)

	// A configured Authorization header wins over the URL's userinfo, as
	// with http.Client.
	s = newTestSender(t, &Config{URL: u, Header: http.Header{"Authorization": {"Bearer t0ken"}}})
	require.NoError(t, s.Handle(context.Background(), testBatch("a")))
	require.Equal(t, []string{"Bearer t0ken"}, rcv.last(t).Header.Values("Authorization"))
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	const notSuch = `the body is not empty and not {"failed"`
	tests := []struct {
		name       string
		status     int
		body       string
		wantFailed map[string]string // a partial failure of these ids
		wantErr    []string          // a whole-batch failure containing these
		wantLogged []string          // ids logged as not in the batch
	}{
		{name: "200 empty acks", status: 200},
		{name: "204 acks", status: 204},
		{name: "202 whitespace acks", status: 202, body: " \r\n\t "},
		{name: "no failed ids acks", status: 200, body: `{"failed": {}}`},
		{name: "partial failure", status: 200, body: `{"failed": {"a": "mailbox full", "c": "bounced"}}`,
			wantFailed: map[string]string{"a": "mailbox full", "c": "bounced"}},
		{name: "partial failure with unknown ids", status: 200, body: `{"failed": {"b": "boom", "zz": "x", "yy": "y"}}`,
			wantFailed: map[string]string{"b": "boom"}, wantLogged: []string{"yy", "zz"}},
		{name: "only unknown ids acks", status: 200, body: `{"failed": {"zz": "x"}}`,
			wantLogged: []string{"zz"}},
		{name: "empty message", status: 200, body: `{"failed": {"a": ""}}`,
			wantFailed: map[string]string{"a": "webhook: failed by the receiver (no message)"}},
		{name: "escaped message", status: 200, body: `{"failed": {"a": "line\nnext \u00e9"}}`,
			wantFailed: map[string]string{"a": "line\nnext é"}},
		{name: "text body", status: 200, body: "OK\n",
			wantErr: []string{"answered 200 OK: ", notSuch, "not a JSON object: OK"}},
		{name: "empty object", status: 200, body: `{}`,
			wantErr: []string{notSuch, `the object's only members may be "failed", "retry_in", "dead", "discard", "state", "timers", "emit" and "result"`}},
		{name: "other member", status: 200, body: `{"failed": {"a": "x"}, "ok": true}`,
			wantErr: []string{notSuch, `only member`}},
		{name: "wrong case", status: 200, body: `{"Failed": {"a": "x"}}`,
			wantErr: []string{notSuch, `only member`}},
		{name: "failed is an array", status: 200, body: `{"failed": ["a"]}`,
			wantErr: []string{notSuch, `"failed" must be an object of strings`}},
		{name: "failed is null", status: 200, body: `{"failed": null}`,
			wantErr: []string{notSuch, `"failed" must be an object of strings`}},
		{name: "message is a number", status: 200, body: `{"failed": {"a": 1}}`,
			wantErr: []string{notSuch, `"failed" must be an object of strings`}},
		{name: "message is null", status: 200, body: `{"failed": {"a": null}}`,
			wantErr: []string{notSuch, `"failed" must be an object of strings`}},
		{name: "null", status: 200, body: `null`, wantErr: []string{notSuch, "not a JSON object"}},
		{name: "array", status: 200, body: `[]`, wantErr: []string{notSuch, "not a JSON object"}},
		{name: "trailing garbage", status: 200, body: `{"failed": {}} x`, wantErr: []string{notSuch, "not a JSON object"}},
		{name: "two objects", status: 200, body: `{"failed": {}}{"failed": {"a": "x"}}`, wantErr: []string{notSuch}},
		{name: "truncated", status: 200, body: `{"failed": {"a": "x"`, wantErr: []string{notSuch}},
		{name: "500", status: 500, body: "database is down\n",
			wantErr: []string{"answered 500 Internal Server Error: database is down"}},
		{name: "500 with a valid answer body", status: 500, body: `{"failed": {}}`,
			wantErr: []string{"answered 500 Internal Server Error: {\"failed\": {}}"}},
		{name: "404", status: 404, wantErr: []string{"answered 404 Not Found"}},
		{name: "redirect not followed", status: 302, wantErr: []string{"answered 302 Found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
				if tt.status == http.StatusFound {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			logger, logs := logBuffer()
			s := newTestSender(t, &Config{URL: rcv.srv.URL + "/hook", Logger: logger})
			batch := testBatch("a", "b", "c")

			err := s.Handle(context.Background(), batch)

			switch {
			case tt.wantFailed != nil:
				pf, ok := orderly.AsPartialFailure(err)
				require.True(t, ok, "want a partial failure, got %v", err)
				got := map[string]string{}
				for id, e := range pf.Failed {
					got[id] = e.Error()
				}
				require.Equal(t, tt.wantFailed, got)
			case tt.wantErr != nil:
				require.Error(t, err)
				_, partial := orderly.AsPartialFailure(err)
				require.False(t, partial, "want a whole-batch failure, got %v", err)
				require.True(t, strings.HasPrefix(err.Error(), "webhook: "+rcv.srv.URL+"/hook answered "), err.Error())
				for _, want := range tt.wantErr {
					require.ErrorContains(t, err, want)
				}
			default:
				require.NoError(t, err)
			}

			var logged []string
			lines := logLines(t, logs)
			for _, line := range lines {
				require.Equal(t, "WARN", line["level"])
				require.Equal(t, "emails", line["queue"])
				require.Equal(t, "emails/3/7/1042", line["delivery"])
				require.EqualValues(t, len(tt.wantLogged), line["count"])
				for _, id := range line["job_ids"].([]any) {
					logged = append(logged, id.(string))
				}
			}
			require.LessOrEqual(t, len(lines), 1, "one line per answer")
			require.Equal(t, tt.wantLogged, logged)
		})
	}
}

// An answer that fails 100,000 ids not in the batch (0.9 MB, under the 1 MiB
// limit) writes one log line: the count and the first ten ids.
func TestForeignIDsLogOneLine(t *testing.T) {
	t.Parallel()
	failed := make(map[string]string, 100_000)
	for i := range 100_000 {
		failed[strconv.FormatInt(int64(i), 16)] = ""
	}
	failed["in-2"] = "boom"
	failed["!"+strings.Repeat("é", 100)] = "" // a long id is cut in the line
	body, err := json.Marshal(wire.Answer{Failed: failed})
	require.NoError(t, err)
	require.Less(t, len(body), int(DefaultMaxResponseBytes))
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })
	logger, logs := logBuffer()
	s := newTestSender(t, &Config{URL: rcv.srv.URL, Logger: logger})

	err = s.Handle(context.Background(), testBatch("in-1", "in-2"))
	pf, ok := orderly.AsPartialFailure(err)
	require.True(t, ok, "%v", err)
	require.Len(t, pf.Failed, 1)
	require.EqualError(t, pf.Failed["in-2"], "boom")

	require.Less(t, logs.Len(), 1024, "the line stays short: %s", logs)
	lines := logLines(t, logs)
	require.Len(t, lines, 1)
	require.EqualValues(t, 100_001, lines[0]["count"])
	require.Equal(t, []any{"!" + strings.Repeat("é", 31) + "…", "0", "1", "10", "100", "1000", "10000", "10001", "10002", "10003"}, lines[0]["job_ids"])
}

func TestStatusErrorQuotesAtMost4KiB(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want string // the quoted body
	}{
		{name: "long", body: strings.Repeat("x", 10_000), want: strings.Repeat("x", 4096)},
		{name: "rune across the cut", body: strings.Repeat("x", 4095) + "é" + "yyy", want: strings.Repeat("x", 4095)},
		{name: "exactly 4 KiB", body: strings.Repeat("z", 4096), want: strings.Repeat("z", 4096)},
		{name: "short", body: "oops", want: "oops"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv := newReceiver(t, answerWith(http.StatusServiceUnavailable, tt.body))
			s := newTestSender(t, &Config{URL: rcv.srv.URL})

			err := s.Handle(context.Background(), testBatch("a"))

			require.EqualError(t, err, "webhook: "+rcv.srv.URL+" answered 503 Service Unavailable: "+tt.want)
		})
	}
}

func TestMaxResponseBytes(t *testing.T) {
	t.Parallel()
	body := `{"failed": {"a": "boom"}}`
	tests := []struct {
		name     string
		max      int64
		status   int
		wantErr  string
		wantPart bool
	}{
		{name: "fits exactly", max: int64(len(body)), status: 200, wantPart: true},
		{name: "too large 2xx", max: int64(len(body)) - 1, status: 200,
			wantErr: "answered 200 OK: the body is larger than max_response_bytes (24): {\"failed\": {\"a\": \"boom\"}"},
		{name: "too large 500 is truncated", max: 5, status: 500,
			wantErr: "answered 500 Internal Server Error: {\"fai"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv := newReceiver(t, answerWith(tt.status, body))
			s := newTestSender(t, &Config{URL: rcv.srv.URL, MaxResponseBytes: tt.max})

			err := s.Handle(context.Background(), testBatch("a"))

			if tt.wantPart {
				_, ok := orderly.AsPartialFailure(err)
				require.True(t, ok, "got %v", err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	t.Run("no answer", func(t *testing.T) {
		rcv := newReceiver(t, waitForCancel)
		s := newTestSender(t, &Config{URL: rcv.srv.URL + "/hook?token=s3cret", Timeout: 50 * time.Millisecond})

		start := time.Now()
		err := s.Handle(context.Background(), testBatch("a"))

		require.Less(t, time.Since(start), 5*time.Second)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.EqualError(t, err, "webhook: posting to "+rcv.srv.URL+"/hook: no answer within 50ms: delivery timeout: context deadline exceeded")
	})
	t.Run("body never ends", func(t *testing.T) {
		rcv := newReceiver(t, func(w http.ResponseWriter, req *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"failed": {`)
			w.(http.Flusher).Flush()
			<-req.Context().Done()
		})
		s := newTestSender(t, &Config{URL: rcv.srv.URL, Timeout: 50 * time.Millisecond})

		start := time.Now()
		err := s.Handle(context.Background(), testBatch("a"))

		require.Less(t, time.Since(start), 5*time.Second)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "webhook: reading the answer of "+rcv.srv.URL+": no answer within 50ms")
	})
}

func TestContextCancellation(t *testing.T) {
	t.Parallel()
	t.Run("cancelled while waiting", func(t *testing.T) {
		rcv := newReceiver(t, waitForCancel)
		s := newTestSender(t, &Config{URL: rcv.srv.URL})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)

		start := time.Now()
		err := s.Handle(ctx, testBatch("a"))

		require.Less(t, time.Since(start), 5*time.Second)
		require.ErrorIs(t, err, context.Canceled)
		require.EqualError(t, err, "webhook: posting to "+rcv.srv.URL+": context canceled")
	})
	t.Run("cancelled before", func(t *testing.T) {
		rcv := newReceiver(t, answerWith(http.StatusOK, ""))
		s := newTestSender(t, &Config{URL: rcv.srv.URL})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()

		err := s.Handle(ctx, testBatch("a"))

		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("the handler's deadline comes first", func(t *testing.T) {
		rcv := newReceiver(t, waitForCancel)
		s := newTestSender(t, &Config{URL: rcv.srv.URL, Timeout: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()

		err := s.Handle(ctx, testBatch("a"))

		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotContains(t, err.Error(), "no answer within", "not the delivery's own timeout")
	})
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	s := newTestSender(t, &Config{URL: "http://u:s3cret@" + addr + "/hook?key=s3cret"})

	err = s.Handle(context.Background(), testBatch("a"))

	require.ErrorContains(t, err, "webhook: posting to http://"+addr+"/hook: ")
	require.ErrorContains(t, err, "connection refused")
	require.NotContains(t, err.Error(), "s3cret")
	var opErr *net.OpError
	require.ErrorAs(t, err, &opErr, "the cause is wrapped")
}

func TestSecretsStayOut(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answerWith(http.StatusOK, `{"failed": {"ghost": "x"}}`))
	base := strings.Replace(rcv.srv.URL, "http://", "http://user:s3cret@", 1)
	logger, logs := logBuffer()
	header := http.Header{"Authorization": {"Bearer s3cret"}}
	s := newTestSender(t, &Config{URL: base + "/hook?token=s3cret#s3cret", Header: header, Logger: logger})

	require.NoError(t, s.Handle(context.Background(), testBatch("a")))
	require.Contains(t, logs.String(), `"url":"`+rcv.srv.URL+`/hook"`)
	require.NotContains(t, logs.String(), "s3cret")

	rcv2 := newReceiver(t, answerWith(http.StatusUnauthorized, "bad token"))
	base2 := strings.Replace(rcv2.srv.URL, "http://", "http://user:s3cret@", 1)
	s2 := newTestSender(t, &Config{URL: base2 + "/hook?token=s3cret", Header: header})
	err := s2.Handle(context.Background(), testBatch("a"))
	require.EqualError(t, err, "webhook: "+rcv2.srv.URL+"/hook answered 401 Unauthorized: bad token")
}

func TestConnectionsAreReused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		switch req.URL.Query().Get("answer") {
		case "partial":
			_, _ = io.WriteString(w, `{"failed": {"a": "x"}}`)
		case "error":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, strings.Repeat("e", 20_000)) // more than is quoted
		case "large":
			_, _ = io.WriteString(w, strings.Repeat(" ", 20_000)) // more than max_response_bytes
		case "chunked": // no Content-Length: read to its end without knowing its size
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `{"failed": {"a": "`+strings.Repeat("x", 3000)+`"}}`)
		case "no-content":
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	for _, answer := range []string{"ack", "partial", "error", "large", "chunked", "no-content", "ack"} {
		s := newTestSender(t, &Config{URL: srv.URL + "?answer=" + answer, Client: srv.Client(), MaxResponseBytes: 10_000})
		_ = s.Handle(context.Background(), testBatch("a"))
	}

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, conns)
}

func TestNew(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answerWith(http.StatusOK, `{"failed": {"b": "boom"}}`))
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)

	s, err := New(&Config{URL: rcv.srv.URL, Client: client})
	require.NoError(t, err)
	err = s.Handle(context.Background(), testBatch("a", "b"))

	pf, ok := orderly.AsPartialFailure(err)
	require.True(t, ok, "got %v", err)
	require.Len(t, pf.Failed, 1)
	require.EqualError(t, pf.Failed["b"], "boom")
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	s := newTestSender(t, &Config{URL: "https://example.com/hook"})

	require.Equal(t, DefaultTimeout, s.timeout)
	require.Equal(t, 30*time.Second, s.timeout)
	require.Equal(t, DefaultMaxResponseBytes, s.maxBytes)
	require.Equal(t, int64(1<<20), s.maxBytes)
	require.Same(t, slog.Default(), s.logger)
	require.Nil(t, s.client, "the sender's own clients")
	require.NotNil(t, s.transport)
	require.Nil(t, s.direct, "https goes through net/http")
	require.True(t, s.transport.DisableCompression)
	require.Equal(t, http.Header{}, s.header)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     *Config
		wantErr string
	}{
		{name: "nil", cfg: nil, wantErr: "webhook: url is required"},
		{name: "no url", cfg: &Config{}, wantErr: "webhook: url is required"},
		{name: "relative", cfg: &Config{URL: "/hook"}, wantErr: "webhook: url must be an http or https URL"},
		{name: "other scheme", cfg: &Config{URL: "ftp://example.com/hook"}, wantErr: "webhook: url must be an http or https URL"},
		{name: "no host", cfg: &Config{URL: "http:///hook"}, wantErr: "webhook: url must be absolute, with a host"},
		{name: "opaque", cfg: &Config{URL: "http:example.com"}, wantErr: "webhook: url must be absolute, with a host"},
		{name: "unparsable", cfg: &Config{URL: "http://u:s3cret@example.com:port/?token=s3cret"}, wantErr: "webhook: url is invalid: "},
		{name: "control character", cfg: &Config{URL: "http://example.com/\x7f?token=s3cret"}, wantErr: "webhook: url is invalid: "},
		{name: "negative timeout", cfg: &Config{URL: "http://example.com", Timeout: -time.Second}, wantErr: "webhook: timeout must not be negative, got -1s"},
		{name: "negative max_response_bytes", cfg: &Config{URL: "http://example.com", MaxResponseBytes: -1}, wantErr: "webhook: max_response_bytes must not be negative, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			require.Nil(t, s)
			require.ErrorContains(t, err, tt.wantErr)
			require.NotContains(t, err.Error(), "s3cret")
		})
	}
	t.Run("valid", func(t *testing.T) {
		for _, u := range []string{"http://127.0.0.1:8080/hook", "HTTPS://Example.com", "https://u:p@example.com/a?b=c"} {
			s := newTestSender(t, &Config{URL: u})
			require.NotNil(t, s)
		}
	})
}

func TestQuoteBody(t *testing.T) {
	t.Parallel()
	require.Equal(t, "", quoteBody(nil))
	require.Equal(t, "abc", quoteBody([]byte("abc \r\n")))
	require.Equal(t, strings.Repeat("a", maxQuotedBody), quoteBody([]byte(strings.Repeat("a", 2*maxQuotedBody))))
	binary := bytes.Repeat([]byte{0xff}, 2*maxQuotedBody)
	require.Len(t, quoteBody(binary), maxQuotedBody, "invalid bytes are not a cut rune")
	cut := strings.Repeat("a", maxQuotedBody-2) + "€" // 3 bytes: cut after 2
	require.Equal(t, strings.Repeat("a", maxQuotedBody-2), quoteBody([]byte(cut)))
}

// requestOf builds the Request of a batch, which decodes back to it: a
// receiver sees every payload's bytes and every field.
func TestRequestOf(t *testing.T) {
	t.Parallel()
	b := testBatch("a", "b")
	b.Jobs[1].RetryCount, b.Jobs[1].Error = 3, "boom"
	b.Jobs[1].Payloads = append(b.Jobs[1].Payloads, orderly.Payload{Data: []byte{0, 0xff}, Score: 7, Headers: map[string]string{"k": "v"}}, orderly.Payload{Data: []byte(`"<&>"`), Score: 8})
	r := requestOf(b)
	require.Equal(t, "emails", r.Queue)
	require.Len(t, r.Jobs, 2)
	for i, j := range b.Jobs {
		require.Equal(t, j.ID, r.Jobs[i].ID)
		require.Equal(t, j.RetryCount, r.Jobs[i].RetryCount)
		require.Equal(t, j.Error, r.Jobs[i].Error)
		require.Equal(t, unixSeconds(j.PerformAt), r.Jobs[i].PerformAt)
		require.Len(t, r.Jobs[i].Payloads, len(j.Payloads))
		for k, p := range j.Payloads {
			require.Equal(t, wire.Payload(p), r.Jobs[i].Payloads[k])
		}
	}
	body, err := r.MarshalJSON()
	require.NoError(t, err)
	var got wire.Request
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, r, got)
}
