package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// The log handler prints the start of a job's first payloads, never whole
// payloads, and none with payloads: false.
func TestLogHandlerPayloads(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1<<20)
	text := "a" + strings.Repeat("é", 150) // 301 bytes: cut inside a character
	batch := &orderly.Batch{Queue: "q", Shard: 1, Delivery: "q/1/1/1", Jobs: []orderly.Job{{ID: "a", Payloads: []orderly.Payload{
		{Data: []byte(`{"card":"4111"}`)}, {Data: []byte(big)}, {Data: []byte(text)}, {Data: []byte("fourth")},
	}}}}
	run := func(hide bool) map[string]any {
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, nil))
		q := config.QueueConfig{Name: "q", Shards: 1, BatchSize: 1, Handler: config.HandlerConfig{Type: config.HandlerLog, HidePayloads: hide}}
		ws, closeWebhooks, err := buildWorkers([]config.QueueConfig{q}, log, nil, nil)
		require.NoError(t, err)
		defer closeWebhooks()
		require.NoError(t, ws[0].Handler(context.Background(), batch))
		require.Less(t, buf.Len(), 1024, "one short line: %s", buf.String())
		var line map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
		return line
	}

	shown := run(false)
	require.EqualValues(t, 4, shown["payloads"])
	require.Equal(t, `{"card":"4111"}`, shown["payload0"])
	require.Equal(t, strings.Repeat("x", config.LogPayloadBytes)+"…", shown["payload1"])
	require.Equal(t, "a"+strings.Repeat("é", config.LogPayloadBytes/2-1)+"…", shown["payload2"], "text stays text")
	require.NotContains(t, shown, "payload3", "three payloads at most")

	hidden := run(true)
	require.EqualValues(t, 4, hidden["payloads"])
	require.Equal(t, "a", hidden["job_id"])
	for k := range hidden {
		require.False(t, strings.HasPrefix(k, "payload") && k != "payloads", "no payload printed: %v", hidden)
	}
}

// An http handler with a secret signs its requests, and sends its static
// headers; the receiver's check rejects a handler without the secret.
func TestHTTPHandlerSecretAndHeaders(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(nil)
	defer rcv.Close()
	rcv.RequireSignature([]byte("s3cr3t"), time.Minute)
	batch := &orderly.Batch{Queue: "q", Shard: 0, Delivery: "q/0/1/1", Jobs: []orderly.Job{{ID: "a", RetryCount: -1,
		Payloads: []orderly.Payload{{Data: []byte(`{}`), Score: 1}}}}}
	handler := func(h config.HandlerConfig) orderly.HandlerFunc {
		h.Type, h.URL, h.Timeout = config.HandlerHTTP, rcv.URL, 10*time.Second
		ws, closeWebhooks, err := buildWorkers([]config.QueueConfig{{Name: "q", Shards: 1, BatchSize: 1, Handler: h}}, slog.New(slog.DiscardHandler), nil, nil)
		require.NoError(t, err)
		t.Cleanup(closeWebhooks)
		return ws[0].Handler
	}

	require.NoError(t, handler(config.HandlerConfig{Secret: "s3cr3t", Headers: map[string]string{"authorization": "Bearer t"}})(context.Background(), batch))
	require.ErrorContains(t, handler(config.HandlerConfig{})(context.Background(), batch), "401")

	calls := rcv.Calls()
	require.Len(t, calls, 2)
	require.NoError(t, calls[0].SignatureErr)
	require.Equal(t, "Bearer t", calls[0].Header.Get("Authorization"))
	require.ErrorIs(t, calls[1].SignatureErr, wire.ErrNoSignature)
}

// An http handler with signature: standard signs with the Standard
// Webhooks headers under the key of its whsec_ secret, which the receiver
// verifies given that secret; its retries_exhausted_url is signed alike.
func TestHTTPHandlerStandardSignature(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rcv := webhooktest.NewReceiver(nil)
	defer rcv.Close()
	rcv.RequireSignature([]byte(secret), time.Minute)
	batch := &orderly.Batch{Queue: "q", Shard: 0, Delivery: "q/0/1/1", Jobs: []orderly.Job{{ID: "a", RetryCount: -1,
		Payloads: []orderly.Payload{{Data: []byte(`{}`), Score: 1}}}}}
	h := config.HandlerConfig{Type: config.HandlerHTTP, URL: rcv.URL, Timeout: 10 * time.Second, Secret: secret, Signature: config.SignatureStandard}
	ws, closeWebhooks, err := buildWorkers([]config.QueueConfig{{Name: "q", Shards: 1, BatchSize: 1, Handler: h}}, slog.New(slog.DiscardHandler), nil, nil)
	require.NoError(t, err)
	t.Cleanup(closeWebhooks)
	require.NoError(t, ws[0].Handler(context.Background(), batch))

	calls := rcv.Calls()
	require.Len(t, calls, 1)
	require.NoError(t, calls[0].SignatureErr)
	require.Equal(t, "q/0/1/1", calls[0].Header.Get(wire.StandardIDHeader))
	require.Empty(t, calls[0].Header.Get(wire.SignatureHeader))
}

// A pull queue runs every call of a window at once unless it says
// otherwise (concurrent_calls) or bounds its calls (max_concurrency, which
// counts one call per shard); other queues run one call after the other.
func TestConcurrentCallsDefaults(t *testing.T) {
	t.Parallel()
	broker := pull.New(nil)
	pullQ := config.HandlerConfig{Type: config.HandlerPull}
	qs := []config.QueueConfig{
		{Name: "p", Shards: 1, BatchSize: 1, Handler: pullQ},
		{Name: "p4", Shards: 1, BatchSize: 1, ConcurrentCalls: 4, Handler: pullQ},
		{Name: "pmax", Shards: 1, BatchSize: 1, MaxConcurrency: 2, Handler: pullQ},
		{Name: "log", Shards: 1, BatchSize: 1, Handler: config.HandlerConfig{Type: config.HandlerLog}},
		{Name: "log3", Shards: 1, BatchSize: 1, ConcurrentCalls: 3, Handler: config.HandlerConfig{Type: config.HandlerLog}},
	}
	ws, closeWebhooks, err := buildWorkers(qs, slog.New(slog.DiscardHandler), nil, broker)
	require.NoError(t, err)
	defer closeWebhooks()
	got := map[string]int{}
	for _, w := range ws {
		got[w.Queue] = w.ConcurrentCalls
	}
	require.Equal(t, map[string]int{"p": persistence.MaxBatchSize, "p4": 4, "pmax": 0, "log": 0, "log3": 3}, got)
}
