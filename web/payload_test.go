package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// The same stored bytes read alike through the HTTP API and the webhook:
// one rule decides between "payload" and "payload_base64"
// (wire.IsCompactJSON), one encoder writes the element (wire.Payload).
func TestPayloadReadsAlikeThroughAPIAndWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		id   string
		data []byte
		json bool // shown as "payload"
	}{
		{"compact-json", []byte(`{"a":1,"b":[true,null],"s":"two  spaces <&>"}`), true},
		{"json-with-whitespace", []byte("{\"a\": 1,\n \"b\": [true, null]}"), false},
		{"outer-whitespace", []byte(" 1 "), false},
		{"invalid-utf8", []byte("\"caf\xe9\""), false},
		{"not-json", []byte("plain text"), false},
		{"binary", []byte{0, 1, 0xff}, false},
	}
	batch := &orderly.Batch{Queue: "q", Delivery: "q/0/1/1"}
	for i, c := range cases {
		score := float64(i + 1)
		require.NoError(t, e.store.Enqueue(e.ctx, "q", []persistence.NewJob{{ID: c.id, Payload: c.data, Score: &score}}))
		batch.Jobs = append(batch.Jobs, orderly.Job{ID: c.id, RetryCount: -1,
			Payloads: []orderly.Payload{{Data: c.data, Score: score}}})
	}

	// What a receiver gets for those bytes.
	bodies := make(chan []byte, 1)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	sender, err := webhook.New(&webhook.Config{URL: rcv.URL})
	require.NoError(t, err)
	defer sender.Close()
	require.NoError(t, sender.Handle(context.Background(), batch))
	var delivered struct {
		Jobs []struct {
			Payloads []json.RawMessage `json:"payloads"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(<-bodies, &delivered))
	require.Len(t, delivered.Jobs, len(cases))

	for i, c := range cases {
		// What an API reader gets for them.
		_, a := e.get(c.id)
		var shown struct {
			Queued struct {
				Payloads []json.RawMessage `json:"payloads"`
			} `json:"queued"`
		}
		require.NoError(t, json.Unmarshal([]byte(a.body), &shown), a.body)
		require.Len(t, shown.Queued.Payloads, 1)

		api, hook := shown.Queued.Payloads[0], delivered.Jobs[i].Payloads[0]
		require.Equal(t, string(api), string(hook), "%s: one element, byte for byte", c.id)
		require.Equal(t, c.json, bytes.HasPrefix(api, []byte(`{"payload":`)), "%s: %s", c.id, api)
		var p wire.Payload
		require.NoError(t, json.Unmarshal(api, &p))
		require.Equal(t, c.data, p.Data, "%s: the stored bytes come back exactly", c.id)
	}
}
