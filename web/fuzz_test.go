package web_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// FuzzEnqueueBody posts arbitrary bytes to the enqueue endpoint: it never
// panics, never answers 5xx, always answers JSON, and a 202 means every job
// of the body is in the store with the payload the body described.
func FuzzEnqueueBody(f *testing.F) {
	for _, seed := range []string{
		`[]`,
		`[{"id": "a"}]`,
		`[{"id": "a", "payload": {"x": [1, 2.5, "s"],  "y": null}, "score": 3}]`,
		`[{"id": "a", "payload_base64": "AP8=", "perform_in": 1.5}, {"id": "a", "payload": "AP8="}]`,
		`[{"id": "a/b%c", "perform_at": 1700000000}, {"id": "\u00e9\ud83d\ude00", "payload": "\u2028<&>"}]`,
		`[{"id": "a", "payload": 1e999}]`,
		`[{"id": "a", "score": 1e999}]`,
		`[{"id": "a", "perform_at": "tomorrow"}]`,
		`[{"id": "a", "perform_in": -1}]`,
		`[{"id": "a", "perform_at": 1, "perform_in": 1}]`,
		`[{"id": "a", "payload": 1, "payload_base64": "AA=="}]`,
		`[{"id": "a", "id": "b"}]`,
		`[{"ID": "a"}]`,
		`[{"id": ""}]`,
		`[{"id": "\ud800"}]`,
		"[{\"id\": \"\xff\"}]",
		`[{"id": "a"},]`,
		`{"id": "a"}`,
		`[[]]`,
		`null`,
		``,
		` `,
		`[{"id": "a", "payload_base64": "***"}]`,
		`[{"id": "a", "payload": "` + string(bytes.Repeat([]byte("x"), 100)) + `"}]`,
	} {
		f.Add([]byte(seed))
	}
	e := newEnv(f)
	var seq atomic.Int64
	f.Fuzz(func(t *testing.T, body []byte) {
		queue := fmt.Sprintf("fuzz%d", seq.Add(1))
		require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: queue, Shards: 2}))
		req := httptest.NewRequest("POST", "/api/v1/queues/"+queue+"/jobs", bytes.NewReader(body))
		rec := httptest.NewRecorder()
		e.srv.ServeHTTP(rec, req)

		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.True(t, json.Valid(rec.Body.Bytes()), rec.Body.String())
		require.Contains(t, []int{http.StatusAccepted, http.StatusBadRequest}, rec.Code, rec.Body.String())
		if rec.Code != http.StatusAccepted {
			var ans struct{ Error, Field string }
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &ans))
			require.NotEmpty(t, ans.Error)
			stats, err := e.store.Stats(e.ctx, queue)
			require.NoError(t, err)
			require.Zero(t, stats[0].Length, "a rejected body writes nothing")
			return
		}

		var jobs []map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &jobs), "a 202 body is an array of objects")
		require.Equal(t, fmt.Sprintf(`{"enqueued":%d}`+"\n", len(jobs)), rec.Body.String())
		for _, j := range jobs {
			for k := range j {
				require.Contains(t, []string{"id", "payload", "payload_base64", "score", "perform_at", "perform_in"}, k, "accepted an unknown field")
			}
			var id string
			require.NoError(t, json.Unmarshal(j["id"], &id))
			want := []byte(`""`)
			if p, ok := j["payload"]; ok {
				var buf bytes.Buffer
				require.NoError(t, json.Compact(&buf, p))
				want = buf.Bytes()
			} else if b, ok := j["payload_base64"]; ok {
				var s string
				require.NoError(t, json.Unmarshal(b, &s))
				var err error
				want, err = base64.StdEncoding.DecodeString(s)
				require.NoError(t, err)
			}
			info, err := e.store.GetJob(e.ctx, queue, id)
			require.NoError(t, err, "id %q", id)
			require.NotNil(t, info.Queued)
			require.True(t, slices.ContainsFunc(info.Queued.Payloads, func(p persistence.Payload) bool {
				return bytes.Equal(p.Data, want)
			}), "id %q: payload %q not among %v", id, want, info.Queued.Payloads)
		}
	})
}
