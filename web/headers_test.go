package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// docs/contract.md §10: headers given to POST jobs are stored with their
// payload and shown by the one-job lookup and the morgue listing.
func TestEnqueueHeadersShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("POST", "/api/v1/queues/q/jobs", `[
		{"id": "h", "payload": {"n": 1}, "score": 1, "headers": {"traceparent": "00-ab-cd-01", "tenant": "acme"}},
		{"id": "h", "payload": {"n": 2}, "score": 2},
		{"id": "n", "headers": null}
	]`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)

	info, err := e.store.GetJob(e.ctx, "q", "h")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"traceparent": "00-ab-cd-01", "tenant": "acme"}, info.Queued.Payloads[0].Headers)

	l, raw := e.get("h")
	require.Equal(t, map[string]string{"traceparent": "00-ab-cd-01", "tenant": "acme"}, l.Queued.Payloads[0].Headers)
	require.Nil(t, l.Queued.Payloads[1].Headers)
	require.Contains(t, raw.body, `{"payload":{"n":1},"score":1,"headers":{"tenant":"acme","traceparent":"00-ab-cd-01"}}`)
	require.Contains(t, raw.body, `{"payload":{"n":2},"score":2}`, "no headers key without headers")
	_, raw = e.get("n")
	require.NotContains(t, raw.body, "headers")

	e.kill("h")
	a = e.do("GET", "/api/v1/queues/q/morgue", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"headers":{"tenant":"acme","traceparent":"00-ab-cd-01"}`)
}

// Bad headers reject the whole request and name the field.
func TestEnqueueHeadersBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var many []string
	for i := range persistence.MaxHeaders + 1 {
		many = append(many, fmt.Sprintf(`"k%d":"v"`, i))
	}
	big := `{"k":"` + strings.Repeat("x", persistence.MaxHeaderBytes) + `"}` // 8 KiB + 1 with the key
	for name, tc := range map[string]struct{ headers, msg string }{
		"33 entries":    {"{" + strings.Join(many, ",") + "}", "33 entries, more than the limit of 32"},
		"8 KiB + 1":     {big, "8193 bytes of keys and values, more than the limit of 8192"},
		"empty key":     {`{"":"v"}`, "a key must not be empty"},
		"not strings":   {`{"k":1}`, `header "k": must be a string, got a number`},
		"not an object": {`["k"]`, "must be an object of strings, got an array"},
		// What would not survive decoding is refused, as in an id, rather
		// than stored changed: two names could merge into one.
		"null value":            {`{"k":null}`, `header "k": must be a string, got null`},
		"value not UTF-8":       {"{\"k\":\"a\xffb\"}", `header "k": not valid UTF-8`},
		"value lone surrogate":  {`{"k":"a\ud800"}`, `header "k": not valid UTF-8`},
		"name not UTF-8":        {"{\"k\xff\":\"v\",\"k\xfe\":\"w\"}", "header \"k\ufffd\": the name is not valid UTF-8"},
		"name lone surrogate":   {`{"k\udc00":"v"}`, `header "k\udc00": the name is not valid UTF-8`},
		"name given twice":      {`{"k":"v","k":"w"}`, `header "k": given more than once`},
		"name twice by escapes": {`{"k":"v","\u006b":"w"}`, `header "k": given more than once`},
	} {
		a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}, {"id": "b", "headers": `+tc.headers+`}]`)
		require.Equal(t, http.StatusBadRequest, a.status, name)
		msg, field := a.errorBody(t)
		require.Equal(t, "jobs[1].headers", field, name)
		require.Contains(t, msg, tc.msg, name)
	}
	require.Equal(t, `{"total":{"length":0,"morgue_length":0,"lag":0},"by_worker":{"q":{"length":0,"morgue_length":0,"lag":0}}}`+"\n", e.stats())

	// Exactly at the limits is accepted.
	a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "b", "headers": {`+strings.Join(many[1:], ",")+`}}, {"id": "c", "headers": {"k":"`+strings.Repeat("x", persistence.MaxHeaderBytes-1)+`"}}]`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
}
