package openapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web/openapi"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// load returns the document, valid.
func load(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.YAML)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context))
	return doc
}

// validate checks JSON against a schema of the document, as JSON Schema
// 2020-12 (OpenAPI 3.1) has it.
func validate(t *testing.T, doc *openapi3.T, schema string, b []byte) error {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v), string(b))
	return doc.Components.Schemas[schema].Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

// The webhooks section describes what package wire writes and reads: the
// request's body of every kind of job, and every member of an answer.
func TestWebhookShapesMatchWire(t *testing.T) {
	t.Parallel()
	doc := load(t)
	require.NotNil(t, doc.Webhooks["delivery"])
	req := wire.Request{Queue: "orders", Shard: 3, Jobs: []wire.Job{
		{ID: "a", RetryCount: -1, PerformAt: 1767225600.25, Payloads: []wire.Payload{{Data: []byte(`{"sku":"A-1"}`), Score: 1767225600.25, Headers: map[string]string{"traceparent": "00-x"}}}},
		{ID: "b", RetryCount: 2, PerformAt: 1767225590, Error: "smtp: 451", Payloads: []wire.Payload{{Data: []byte{0, 1, 2, 255}, Score: 1}, {Data: []byte(`"text"`), Score: 2}}},
		{ID: "c", RetryCount: -1, Stateful: true, State: []byte(`{"n":1}`), Version: 4, Payloads: []wire.Payload{{Data: []byte(`1`), Score: 3}}},
		{ID: "d", RetryCount: -1, Stateful: true, State: nil, Version: 5, Timer: true, Payloads: []wire.Payload{}},
		{ID: "e", RetryCount: -1, Stateful: true, Version: 0, Payloads: []wire.Payload{{Data: []byte(`null`), Score: 3}}},
		{ID: "f", RetryCount: -1, Stateful: true, State: []byte{0xff}, Version: 1, Payloads: []wire.Payload{}},
	}}
	body, err := req.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, validate(t, doc, "WebhookRequest", body), string(body))
	require.Error(t, validate(t, doc, "WebhookRequest", []byte(`{"queue":"q","shard":0,"jobs":[],"extra":1}`)))

	in := 90 * time.Second
	perform := wire.Delay(in)
	at := "2026-01-01T00:00:00Z"
	ans := wire.Answer{
		Failed:  map[string]string{"a": "card declined"},
		State:   map[string]json.RawMessage{"c": json.RawMessage(`{"n":2}`), "d": json.RawMessage(`null`)},
		Timers:  map[string]*string{"c": &at, "d": nil},
		Emit:    []wire.Emit{{From: "c", Queue: "audit", ID: "c-1", Payload: json.RawMessage(`{"x":1}`), PerformIn: &perform, Headers: map[string]string{"k": "v"}}},
		RetryIn: map[string]wire.Delay{"b": wire.Delay(30 * time.Second)},
		Dead:    map[string]string{"e": "unknown product"},
		Discard: map[string]string{"f": "superseded"},
		Result:  map[string]json.RawMessage{"c": json.RawMessage(`[1,null]`)},
	}
	body, err = json.Marshal(ans)
	require.NoError(t, err)
	require.NoError(t, validate(t, doc, "WebhookAnswer", body), string(body))
	// What a receiver in another language may write, as wire reads it.
	require.NoError(t, validate(t, doc, "WebhookAnswer", []byte(`{"retry_in":{"o-2":30,"o-3":"10m"}}`)))
	require.NoError(t, validate(t, doc, "WebhookAnswer", []byte(`{}`)))
	var back wire.Answer
	require.NoError(t, json.Unmarshal([]byte(`{"retry_in":{"o-2":30,"o-3":"10m"}}`), &back))
	require.Error(t, validate(t, doc, "WebhookAnswer", []byte(`{"failed":{"a":1}}`)))
	require.Error(t, validate(t, doc, "WebhookAnswer", []byte(`{"acked":["a"]}`)))
}

// JSON is the document, in JSON.
func TestJSON(t *testing.T) {
	t.Parallel()
	b, err := openapi.JSON()
	require.NoError(t, err)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context))
	require.Equal(t, load(t).Paths.Len(), doc.Paths.Len())
}
