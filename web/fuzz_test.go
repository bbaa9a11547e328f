package web_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
		`[{"id": "a", "headers": {"traceparent": "00-ab-cd-01", "": "x"}}]`,
		`[{"id": "a", "headers": {"k": 1}}, {"id": "b", "headers": null}]`,
		`[{"id": "a", "payload": "` + string(bytes.Repeat([]byte("x"), 100)) + `"}]`,
	} {
		f.Add([]byte(seed))
	}
	e := newEnv(f)
	var seq atomic.Int64
	f.Fuzz(func(t *testing.T, body []byte) {
		queue := fmt.Sprintf("fuzz%d", seq.Add(1))
		require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: queue, Shards: 2}))
		req := newRequest("POST", "/api/v1/queues/"+queue+"/jobs", bytes.NewReader(body))
		rec := serveChecked(t, e.srv, req)

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
		require.Equal(t, fmt.Sprintf(`{"enqueued":%d,"duplicates":0}`+"\n", len(jobs)), rec.Body.String())
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

// FuzzListQuery sends arbitrary query strings to the queue and morgue
// listings: they never panic, never answer 5xx, always answer JSON (a page
// or an error), list only what is there and change nothing.
func FuzzListQuery(f *testing.F) {
	for _, seed := range []string{
		"",
		"order=id&limit=2",
		"order=perform_at&rev=true&min=1699999990&max=1700000000",
		"order=retry_count&min=-1&max=-1&payloads=1",
		"order=updated_at&rev=1",
		"cursor=YzEAaWQAMAAwAGE",
		"cursor=YzEAaWQAMQAwAGE&rev=1",
		"cursor=YzEAcGVyZm9ybV9hdAAwAG5hbgBh&order=perform_at",
		"cursor=%00%FF",
		"limit=0", "limit=-1", "limit=1e3", "limit=99999999999999999999", "limit=1&limit=1",
		"min=NaN&order=perform_at", "max=-Inf&order=retry_count", "min=%FF&max=%00",
		"rev=maybe", "order=", "order=id;drop", "a=1&&b=2", "=", "%", "%zz", "&&&", "x",
		"min=" + strings.Repeat("z", 600),
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	e := newEnv(f)
	e.enqueue(`[{"id": "a", "payload": 1}, {"id": "b", "perform_at": 1699999990}, {"id": "c/d"}, {"id": "é"}]`)
	e.failDue(func(string) time.Time { return e.clock.Now().Add(time.Minute) }) // all four retry
	e.enqueue(`[{"id": "a", "payload": 2}, {"id": "f"}, {"id": "g", "perform_in": 10}, {"id": "dead"}]`)
	e.kill("dead") // and whatever else is due in its shard
	before, err := e.store.Stats(e.ctx, "q")
	require.NoError(f, err)
	require.NotZero(f, before[0].Length)
	require.NotZero(f, before[0].MorgueLength)
	f.Fuzz(func(t *testing.T, query string, morgue bool) {
		path := "/api/v1/queues/q/jobs"
		if morgue {
			path = "/api/v1/queues/q/morgue"
		}
		req := newRequest("GET", path, nil)
		req.URL.RawQuery = query
		rec := serveChecked(t, e.srv, req)

		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.True(t, json.Valid(rec.Body.Bytes()), rec.Body.String())
		require.Contains(t, []int{http.StatusOK, http.StatusBadRequest}, rec.Code, rec.Body.String())
		if rec.Code == http.StatusBadRequest {
			var ans struct{ Error, Field string }
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &ans))
			require.NotEmpty(t, ans.Error)
			return
		}
		var page map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
		key := "jobs"
		if morgue {
			key = "entries"
		}
		var entries []struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(page[key], &entries), rec.Body.String())
		require.NotNil(t, entries)
		for _, en := range entries {
			if morgue {
				require.NotEmpty(t, en.ID)
				continue
			}
			info, err := e.store.GetJob(e.ctx, "q", en.ID)
			require.NoError(t, err)
			require.NotNil(t, info.Queued, "listed %q, which is not queued", en.ID)
		}
		var next string
		require.NoError(t, json.Unmarshal(page["next"], &next))

		after, err := e.store.Stats(e.ctx, "q")
		require.NoError(t, err)
		require.Equal(t, before, after, "a listing changes nothing")
	})
}

// FuzzSelectionBody posts arbitrary bodies to the morgue's delete and
// requeue endpoints: they never panic, never answer 5xx, always answer
// JSON; a rejected body changes nothing, and a 200 deletes or requeues
// exactly the entries it named (all of them for {"all": true}).
func FuzzSelectionBody(f *testing.F) {
	for _, seed := range []string{
		`{"ids": ["a"]}`,
		`{"ids": ["a", "c/d", "\u00e9", "a", "zz"]}`,
		`{"ids": []}`,
		`{"all": true}`,
		`{"all": false}`,
		`{"all": true, "ids": []}`,
		`{"ids": ["a"], "ids": ["b"]}`,
		`{"IDS": ["a"]}`,
		`{"ids": ["\ud800"]}`,
		"{\"ids\": [\"\xff\"]}",
		`{"ids": [""]}`,
		`{"ids": [1]}`,
		`{"ids": "a"}`,
		`{"ids": null}`,
		`{"all": "true"}`,
		`["a"]`,
		`null`,
		``,
		`{`,
		`{"ids": ["a"]} x`,
		`{"ids": ["` + strings.Repeat("x", 513) + `"]}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	e := newEnv(f)
	var seq atomic.Int64
	dead := []string{"a", "b", "c/d", "é"}
	f.Fuzz(func(t *testing.T, body []byte, requeue bool) {
		queue := fmt.Sprintf("sel%d", seq.Add(1))
		require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: queue, Shards: 1}))
		var jobs []persistence.NewJob
		for _, id := range dead {
			jobs = append(jobs, persistence.NewJob{ID: id, Payload: []byte(`"` + id + `"`)})
		}
		require.NoError(t, e.store.Enqueue(e.ctx, queue, jobs))
		lease, _, err := e.store.AcquireShard(e.ctx, persistence.ShardRef{Queue: queue}, "node-a", time.Minute)
		require.NoError(t, err)
		res, err := e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Fetch: 10, NextSeq: 1})
		require.NoError(t, err)
		var failures []persistence.Failure
		for _, j := range res.Batch.Jobs {
			failures = append(failures, persistence.Failure{ID: j.ID, Error: "boom"})
		}
		_, err = e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Settle: 1, Failures: failures, NextSeq: 2})
		require.NoError(t, err)
		require.NoError(t, e.store.ReleaseShard(e.ctx, lease))

		path, key := "/api/v1/queues/"+queue+"/morgue/delete", "deleted"
		if requeue {
			path, key = "/api/v1/queues/"+queue+"/morgue/requeue", "requeued"
		}
		rec := serveChecked(t, e.srv, newRequest("POST", path, bytes.NewReader(body)))
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.True(t, json.Valid(rec.Body.Bytes()), rec.Body.String())
		require.Contains(t, []int{http.StatusOK, http.StatusBadRequest}, rec.Code, rec.Body.String())

		// What the body named, when it was accepted.
		named := map[string]bool{}
		if rec.Code == http.StatusOK {
			var sel map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(body, &sel))
			require.Len(t, sel, 1, "a 200 body has exactly one field")
			if raw, ok := sel["all"]; ok {
				require.Equal(t, "true", strings.TrimSpace(string(raw)))
				for _, id := range dead {
					named[id] = true
				}
			} else {
				var ids []string
				require.NoError(t, json.Unmarshal(sel["ids"], &ids), "a 200 body is all or ids")
				for _, id := range ids {
					named[id] = true
				}
			}
			want := 0
			for _, id := range dead {
				if named[id] {
					want++
				}
			}
			require.Equal(t, fmt.Sprintf(`{%q:%d}`+"\n", key, want), rec.Body.String())
		}
		page, err := e.store.ListMorgue(e.ctx, queue, persistence.ListOptions{})
		require.NoError(t, err)
		inMorgue := map[string]bool{}
		for _, en := range page.Entries {
			inMorgue[en.ID] = true
		}
		for _, id := range dead {
			require.Equal(t, !named[id], inMorgue[id], "%q: in the morgue unless named", id)
			info, err := e.store.GetJob(e.ctx, queue, id)
			switch {
			case requeue && named[id]:
				require.NoError(t, err, "%q was requeued", id)
				require.NotNil(t, info.Queued, "%q was requeued", id)
			case named[id]:
				require.ErrorIs(t, err, persistence.ErrNotFound, "%q was deleted", id)
			default:
				require.NoError(t, err, "%q is in the morgue", id)
				require.Nil(t, info.Queued, "%q was not requeued", id)
			}
		}
	})
}
