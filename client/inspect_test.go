package client_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// The inspection API reads and acts on a real store: listings page through
// everything, a lookup finds an id, and each action does what the HTTP API's
// does.
func TestClientInspect(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 4}))
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)
	var jobs []client.Job
	for i := range 250 {
		jobs = append(jobs, client.Job{ID: fmt.Sprintf("id-%03d", i), Payload: []byte("p")})
	}
	require.NoError(t, c.Enqueue(ctx, "q", jobs...))

	qs, err := c.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, []client.QueueSpec{{Name: "q", Shards: 4}}, qs)
	st, err := c.Stats(ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 250, st[0].Length)

	seen := map[string]bool{}
	prev := ""
	for j, err := range c.Jobs(ctx, "q", client.ListOptions{Order: persistence.OrderID, Limit: 60}) {
		require.NoError(t, err)
		require.Greater(t, j.ID, prev, "in id order")
		prev = j.ID
		seen[j.ID] = true
	}
	require.Len(t, seen, 250, "every page, once")
	n := 0
	for range c.Jobs(ctx, "q", client.ListOptions{Limit: 10}) {
		n++
		if n == 15 {
			break
		}
	}
	require.Equal(t, 15, n, "a range stops when the loop does")

	info, err := c.GetJob(ctx, "q", "id-007")
	require.NoError(t, err)
	require.Equal(t, "id-007", info.Queued.ID)
	require.Equal(t, persistence.ShardOf("id-007", 4), info.Shard)
	require.NoError(t, c.Delete(ctx, "q", "id-007"))
	require.ErrorIs(t, c.Delete(ctx, "q", "id-007"), persistence.ErrNotFound)
	_, err = c.GetJob(ctx, "q", "id-007")
	require.ErrorIs(t, err, persistence.ErrNotFound)

	for _, id := range []string{"id-001", "id-002", "id-003"} {
		require.NoError(t, c.Kill(ctx, "q", id))
	}
	var dead []string
	for e, err := range c.Morgue(ctx, "q", client.ListOptions{Order: persistence.OrderID, Limit: 2}) {
		require.NoError(t, err)
		dead = append(dead, e.ID)
	}
	require.Equal(t, []string{"id-001", "id-002", "id-003"}, dead)
	n, err = c.RequeueMorgue(ctx, "q")
	require.NoError(t, err)
	require.Zero(t, n, "no ids requeue nothing")
	n, err = c.RequeueMorgue(ctx, "q", "id-002", "unknown")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = c.DeleteMorgue(ctx, "q")
	require.NoError(t, err)
	require.Zero(t, n, "no ids delete nothing")
	n, err = c.DeleteMorgueAll(ctx, "q")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = c.RequeueMorgueAll(ctx, "q")
	require.NoError(t, err)
	require.Zero(t, n)
	st, err = c.Stats(ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 247, st[0].Length, "250 - deleted 1 - killed 3 + requeued 1")
	require.EqualValues(t, 0, st[0].MorgueLength)

	inflight, err := c.InFlight(ctx, "q")
	require.NoError(t, err)
	for _, b := range inflight {
		require.Empty(t, b.Jobs, "no owner fetched anything")
	}

	var errs []error
	for _, err := range c.Jobs(ctx, "nope", client.ListOptions{}) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1, "the error, once")
	require.ErrorIs(t, errs[0], persistence.ErrUnknownQueue)
}

// The finished records of a queue with retain_finished page through the
// client like the other listings (docs/contract.md §3.14).
func TestClientFinished(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)
	var jobs []client.Job
	for i := range 25 {
		jobs = append(jobs, client.Job{ID: fmt.Sprintf("id-%02d", i)})
	}
	require.NoError(t, c.Enqueue(ctx, "q", jobs...))
	lease, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: "q"}, "n1", time.Minute)
	require.NoError(t, err)
	_, err = s.Advance(ctx, lease, persistence.AdvanceRequest{Fetch: 100, NextSeq: 1, RetainFinished: time.Hour})
	require.NoError(t, err)
	_, err = s.Advance(ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, RetainFinished: time.Hour,
		Results: map[string][]byte{"id-07": []byte(`"ok"`)}})
	require.NoError(t, err)

	var ids []string
	for f, err := range c.Finished(ctx, "q", client.ListOptions{Order: persistence.OrderID, Limit: 10}) {
		require.NoError(t, err)
		ids = append(ids, f.ID)
		require.Equal(t, 1, f.Attempts)
		if f.ID == "id-07" {
			require.Equal(t, `"ok"`, string(f.Result))
		}
	}
	require.Len(t, ids, 25)
	require.True(t, slices.IsSorted(ids))
	p, err := c.ListFinished(ctx, "q", client.ListOptions{Limit: 5})
	require.NoError(t, err)
	require.Len(t, p.Jobs, 5)
	require.NotEmpty(t, p.Next)
}
