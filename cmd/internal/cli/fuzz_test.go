package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
)

// acceptStore is a store that takes every enqueue the API lets through:
// the fuzz test's oracle is the API's own validation, in process.
type acceptStore struct{ persistence.Store }

func (acceptStore) Enqueue(context.Context, string, []persistence.NewJob) error { return nil }

// FuzzParseJobLine checks the JSONL line parser against the node: a line
// it accepts is a job the API accepts, sent byte for byte; a single JSON
// value it refuses, the API refuses too (so local checks never turn away a
// job the node would take, nor let through one it would not).
func FuzzParseJobLine(f *testing.F) {
	for _, seed := range []string{
		`{"id": "a"}`,
		` {"id":"a","payload":null} `,
		`{"id": "\u00e9\ud83d\ude00", "payload_base64": "AP8=", "score": -1.5e3, "perform_in": 0}`,
		`{"payload": {"id": 1, "id": 2}, "id": "a", "perform_at": 1700000000.25}`,
		`{"\u0069d": "escaped key"}`,
		`{"id": "a", "\u0069d": "b"}`,
		`{"id": "a\ud800b"}`,
		`{"id": "a\udc00\ud800"}`,
		`{"id": "\ud800\udc00"}`,
		"{\"id\": \"a\xffb\"}",
		`{"id": ""}`,
		`{"id": "` + strings.Repeat("x", 513) + `"}`,
		`{"id": 1}`,
		`{"id": "a", "payload": 1, "payload_base64": "AA=="}`,
		`{"id": "a", "payload_base64": "AA="}`,
		`{"id": "a", "payload_base64": "A\/8="}`,
		`{"id": "a", "score": 1e400}`,
		`{"id": "a", "score": -0}`,
		`{"id": "a", "perform_at": 17179869184}`,
		`{"id": "a", "perform_at": 17179869184.5}`,
		`{"id": "a", "perform_in": 17179869184}`,
		`{"id": "a", "perform_in": -1e-300}`,
		`{"id": "a", "perform_in": 1, "perform_at": 1}`,
		`{"id": "a", "unknown": true}`,
		`{"id":"a"},{"id":"b"}`,
		`[{"id": "a"}]`,
		`"id"`,
		"\x00\x01\xff",
		"\xEF\xBB\xBF{\"id\": \"bom\"}",
		"",
		"   ",
	} {
		f.Add([]byte(seed))
	}
	srv, err := web.New(&web.Config{
		Store:           acceptStore{},
		Now:             func() time.Time { return time.Unix(0, 0) },
		MaxPayloadBytes: maxBodyBytes,
		Logger:          slog.New(slog.DiscardHandler),
	})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, line []byte) {
		job, err := parseJobLine(line, time.Unix(0, 0))
		trimmed := trimJSONSpace(line)
		if len(trimmed) == 0 {
			require.Error(t, err, "a blank line is not a job")
			return
		}
		body := joinJobs([][]byte{trimmed}, len(trimmed))
		req := httptest.NewRequest("POST", "/api/v1/queues/q/jobs", strings.NewReader(string(body)))
		req.Host = "localhost" // the node answers no other name without a token
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if err == nil {
			require.Equal(t, trimmed, job, "sent as it is")
			require.True(t, json.Valid(body))
			require.Equal(t, http.StatusAccepted, rec.Code, "the node refuses what the CLI accepted: %s", rec.Body)
			return
		}
		var le *lineError
		require.ErrorAs(t, err, &le)
		if json.Valid(trimmed) { // the CLI takes one JSON value a line, the API an array
			require.Equal(t, http.StatusBadRequest, rec.Code, "the node accepts what the CLI refused (%v)", err)
		}
	})
}
