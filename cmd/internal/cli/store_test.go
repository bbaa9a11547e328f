package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestStoreDowngrade fills a layout 2 store with queued, delayed and
// morgue jobs, rolls it back with orderly store downgrade and finds every
// job in layout 1's keys, payloads in score order.
func TestStoreDowngrade(t *testing.T) {
	db := redistest.New(t)
	if db.Embedded {
		t.Skip("needs a real redis-server")
	}
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	sc := func(v float64) *float64 { return &v }
	jobs := []persistence.NewJob{
		{ID: "dead", Payload: []byte("d"), Score: sc(1), PerformAt: time.Now().Add(-time.Second)},
		{ID: "later", Payload: []byte("l"), Score: sc(1), PerformAt: time.Now().Add(time.Hour)},
	}
	for i := range 300 {
		jobs = append(jobs, persistence.NewJob{ID: "big", Payload: []byte(fmt.Sprintf("b%04d", i)), Score: sc(float64(i))})
	}
	for i := range 50 {
		jobs = append(jobs, persistence.NewJob{ID: fmt.Sprintf("one-%02d", i), Payload: []byte("x"), Score: sc(1)})
	}
	require.NoError(t, s.Enqueue(ctx, "q", jobs))
	// "dead" goes to the morgue; the lease is held while the command runs
	// first.
	ref := persistence.ShardRef{Queue: "q", Shard: 0}
	l, _, err := s.AcquireShard(ctx, ref, "n", 300*time.Millisecond)
	require.NoError(t, err)
	_, err = s.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 1})
	require.NoError(t, err)
	_, err = s.Advance(ctx, l, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, Failures: []persistence.Failure{{ID: "dead", Error: "gone"}}})
	require.NoError(t, err)

	env := map[string]string{"ORDERLY_REDIS": "redis://" + db.Addr}
	pre := "--prefix=" + db.Prefix

	r := exec(runOpts{env: env}, "store", "layout", pre, "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var lj layoutJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &lj))
	require.Equal(t, layoutJSON{Layout: "2", Queues: 1, Shards: 1}, lj)

	// Without --yes and no terminal: the plan, exit 2, nothing changed.
	r = exec(runOpts{env: env}, "store", "downgrade", pre)
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "back to storage layout 1")
	require.Contains(t, r.stderr, "--yes")
	// At a terminal, anything but yes changes nothing.
	r = exec(runOpts{env: env, stdinTTY: true, stdin: strings.NewReader("n\n")}, "store", "downgrade", pre)
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "not confirmed")
	require.Equal(t, "2", db.Client.Get(ctx, db.Prefix+":layout").Val())

	// A node still holds the lease: refused, with what to do.
	r = exec(runOpts{env: env}, "store", "downgrade", pre, "--yes")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "still serves")
	require.Contains(t, r.stderr, "stop every node")

	// Once the lease expired, the downgrade goes through.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r = exec(runOpts{env: env, stdinTTY: true, stdin: strings.NewReader("yes\n")}, "store", "downgrade", pre, "--json")
		if r.code == ExitOK || time.Now().After(deadline) {
			break
		}
		require.Contains(t, r.stderr, "still serves")
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, ExitOK, r.code, r.stderr)
	var dj downgradeJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &dj))
	require.Equal(t, downgradeJSON{Layout: "1", Queues: 1, Shards: 1}, dj)

	left, err := db.Client.Keys(ctx, db.Prefix+":{q:0}:2:*").Result()
	require.NoError(t, err)
	require.Empty(t, left, "no layout 2 key left")
	require.Zero(t, db.Client.Exists(ctx, db.Prefix+":layout").Val())

	// Layout 1's keys hold every job.
	payloads := func(id string) []string {
		t.Helper()
		v, err := db.Client.ZRange(ctx, db.Prefix+":{q:0}:p:"+id, 0, -1).Result()
		require.NoError(t, err)
		return v
	}
	big := payloads("big")
	require.Len(t, big, 300)
	for i, p := range big {
		require.Equal(t, fmt.Sprintf("b%04d", i), p)
	}
	require.Equal(t, []string{"l"}, payloads("later"))
	for i := range 50 {
		require.Equal(t, []string{"x"}, payloads(fmt.Sprintf("one-%02d", i)))
	}
	due, err := db.Client.ZCard(ctx, db.Prefix+":{q:0}:due").Result()
	require.NoError(t, err)
	require.EqualValues(t, 52, due, "big, later and the 50 one-* are due")
	m, err := db.Client.ZRange(ctx, db.Prefix+":{q:0}:m:dead", 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, []string{"d"}, m)
	require.Equal(t, "gone", db.Client.HGet(ctx, db.Prefix+":{q:0}:morgue_errors", "dead").Val())

	// layout now says 1.
	r = exec(runOpts{env: env}, "store", "layout", pre)
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "layout 1")
}

// TestStoreUsage checks the store commands' errors: a missing or bad URL,
// an unknown command, a prefix without a store.
func TestStoreUsage(t *testing.T) {
	r := exec(runOpts{}, "store", "layout")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "--redis is required")
	r = exec(runOpts{}, "store", "layout", "--redis", "http://x")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "--redis:")
	r = exec(runOpts{}, "store", "downgrad")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "did you mean downgrade")
	r = exec(runOpts{}, "store", "--help")
	require.Equal(t, ExitOK, r.code)
	require.Contains(t, r.stdout, "orderly store downgrade --redis URL")
	r = exec(runOpts{}, "store", "downgrade", "--help")
	require.Equal(t, ExitOK, r.code)
	require.Contains(t, r.stdout, "--yes")

	db := redistest.New(t)
	r = exec(runOpts{}, "store", "downgrade", "--redis", "redis://"+db.Addr, "--prefix", db.Prefix+"-typo", "--yes", "--json")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, `"exit_code":1`)
	require.Contains(t, r.stderr, "no queue is registered")
}
