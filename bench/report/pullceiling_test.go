package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPullFeed: the fake node of pull-ceiling hands out leases of at most
// per-lease jobs, by a pull or an answer's next, counts the answered jobs,
// refuses an answer to an unknown lease, and says when all are answered.
func TestPullFeed(t *testing.T) {
	feed := newPullFeed(5, 3)
	srv := httptest.NewServer(feed)
	defer srv.Close()
	post := func(path, body string) (int, map[string]json.RawMessage) {
		resp, err := http.Post(srv.URL+"/api/v1/queues/bench/pull"+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var doc map[string]json.RawMessage
		if len(b) > 0 {
			require.NoError(t, json.Unmarshal(b, &doc), string(b))
		}
		return resp.StatusCode, doc
	}
	lease := func(raw json.RawMessage) (string, int) {
		var l struct {
			Lease string            `json:"lease"`
			Jobs  []json.RawMessage `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal(raw, &l))
		return l.Lease, len(l.Jobs)
	}

	status, doc := post("", `{"max_ids":10,"wait":1}`)
	require.Equal(t, http.StatusOK, status)
	first, n := lease(mustMarshal(t, doc))
	require.Equal(t, 3, n, "per-lease bounds a lease")

	status, doc = post("/"+first+"/answer", `{"next":{"max_ids":10,"wait":1}}`)
	require.Equal(t, http.StatusOK, status)
	second, n := lease(doc["next"])
	require.Equal(t, 2, n, "the jobs left")

	status, _ = post("/"+first+"/answer", `{}`)
	require.Equal(t, http.StatusConflict, status, "answered already")
	status, _ = post("/"+second+"/extend", `{"by":30}`)
	require.Equal(t, http.StatusOK, status)
	status, _ = post("", `{"max_ids":10,"wait":1}`)
	require.Equal(t, http.StatusNoContent, status, "nothing left to hand out")

	select {
	case <-feed.allDone:
		t.Fatal("done before the last answer")
	default:
	}
	status, doc = post("/"+second+"/answer", `{"next":{"max_ids":10,"wait":1}}`)
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, doc, "next")
	<-feed.allDone
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
