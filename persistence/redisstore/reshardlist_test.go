package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// The listings and lookups meet an id while it is on its way: exported from its old
// shard and not imported yet (in the old shard's export entry only), and
// imported but not confirmed (in the entry and in its new shard: shown
// once).
func TestReshardListingsMeetIDsOnTheirWay(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 2, Stateful: true}))
	var queued []string
	var jobs []persistence.NewJob
	for i := range 30 {
		id := fmt.Sprintf("id-%02d", i)
		queued = append(queued, id)
		jobs = append(jobs, persistence.NewJob{ID: id, Payload: []byte("a"), Score: ptr(1.0)},
			persistence.NewJob{ID: id, Payload: []byte("b"), Score: ptr(2.0)})
	}
	for _, id := range queued[:10] {
		_, err := s.SetState(ctx, "q", id, []byte("s-"+id), 0, 0)
		require.NoError(t, err)
	}
	jobs = append(jobs, persistence.NewJob{ID: "dead", Payload: []byte("x")})
	require.NoError(t, s.Enqueue(ctx, "q", jobs))
	killed, err := s.KillJob(ctx, "q", "dead")
	require.NoError(t, err)
	require.True(t, killed)

	stages := map[string]int{}
	redisstore.SetDrainStage(s, func(stage string) {
		stages[stage]++
		for _, order := range []persistence.Order{persistence.OrderID, persistence.OrderPerformAt} {
			var got []string
			cur := ""
			for {
				p, err := s.ListJobs(ctx, "q", persistence.ListOptions{Order: order, Limit: 4, Cursor: cur})
				require.NoError(t, err)
				for _, j := range p.Jobs {
					got = append(got, j.ID)
					require.Equal(t, 2, j.PayloadCount, "%s: %s has both payloads", stage, j.ID)
				}
				if cur = p.Next; cur == "" {
					break
				}
			}
			require.ElementsMatch(t, queued, got, "%s, by %s: every id once", stage, order)
		}
		for _, id := range queued {
			p, err := s.ListJobs(ctx, "q", persistence.ListOptions{Min: id, Max: id})
			require.NoError(t, err)
			require.Len(t, p.Jobs, 1, "%s: the lookup of %s", stage, id)
			info, err := s.GetJob(ctx, "q", id)
			require.NoError(t, err, stage)
			require.NotNil(t, info.Queued, "%s: %s is queued", stage, id)
			require.Equal(t, 2, info.Queued.PayloadCount, stage)
			st, err := s.GetState(ctx, "q", id)
			require.NoError(t, err, stage)
			if id < queued[10] {
				require.Equal(t, "s-"+id, string(st.Data), "%s: the state of %s", stage, id)
				require.NotNil(t, info.State, stage)
				require.EqualValues(t, 1, info.State.Version, stage)
			} else {
				require.Zero(t, st.Version, stage)
			}
		}
		info, err := s.GetJob(ctx, "q", "dead")
		require.NoError(t, err, stage)
		require.NotNil(t, info.Morgue, stage)
		m, err := s.ListMorgue(ctx, "q", persistence.ListOptions{})
		require.NoError(t, err)
		require.Len(t, m.Entries, 1, stage)
		require.Equal(t, "dead", m.Entries[0].ID)
	})
	sh, err := s.Reshard(ctx, "q", 3)
	require.NoError(t, err)
	for _, ref := range sh.From.Refs("q") {
		lease, _, err := s.AcquireShard(ctx, ref, "n", time.Minute)
		require.NoError(t, err)
		_, err = s.Advance(ctx, lease, persistence.AdvanceRequest{NextSeq: 1, MaxRetryCount: 25})
		require.NoError(t, err)
		for {
			r, err := s.DrainShard(ctx, lease, 3)
			require.NoError(t, err)
			if r.Done {
				break
			}
		}
		require.NoError(t, s.ReleaseShard(ctx, lease))
	}
	require.Greater(t, stages["exported"], 10)
	require.Equal(t, stages["exported"], stages["imported"])
}

func ptr[T any](v T) *T { return &v }
