package orderly_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/persistence"
)

// whaleEvent is one handler call of the whale test: the whale's part of it
// (payload count and scores) or another id.
type whaleEvent struct {
	id       string
	payloads int
	first    float64
	last     float64
}

// One id with many payloads (ORDERLY_WHALE_PAYLOADS, 20000 by default;
// make soak runs 200000) drains through a node in calls of at most
// max_payloads_per_call payloads, in score order across calls, while the
// other ids of its shard and of the other shards are served: they all
// complete before the whale's last call (docs/contract.md §2.6). No lease
// is lost meanwhile.
func TestWhaleDrainsWhileOthersAreServed(t *testing.T) {
	t.Parallel()
	size := 20_000
	if v := os.Getenv("ORDERLY_WHALE_PAYLOADS"); v != "" {
		var err error
		size, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	const shards = 4
	e := newEnv(t)
	var mu sync.Mutex
	var events []whaleEvent
	obs := &lossCounter{}
	e.start(orderly.Config{Observer: obs, Workers: []orderly.Worker{{
		Queue: "q", Shards: shards,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				ev := whaleEvent{id: j.ID, payloads: len(j.Payloads)}
				for i, p := range j.Payloads {
					if i > 0 && p.Score < j.Payloads[i-1].Score {
						ev.payloads = -1 // out of order within the call
					}
				}
				if len(j.Payloads) > 0 {
					ev.first, ev.last = j.Payloads[0].Score, j.Payloads[len(j.Payloads)-1].Score
				}
				mu.Lock()
				events = append(events, ev)
				mu.Unlock()
				if j.ID == "whale" {
					// A whale call does some work, as real ones do.
					select {
					case <-time.After(20 * time.Millisecond):
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
			return nil
		},
	}}})

	whaleShard := persistence.ShardOf("whale", shards)
	jobs := make([]persistence.NewJob, 0, size)
	for i := range size {
		score := float64(i + 1)
		jobs = append(jobs, persistence.NewJob{ID: "whale", Payload: []byte(strconv.Itoa(i + 1)), Score: &score})
	}
	for len(jobs) > 0 {
		n := min(len(jobs), 10_000)
		require.NoError(t, e.store.Enqueue(e.ctx, "q", jobs[:n]))
		jobs = jobs[n:]
	}
	// Others: ids of the whale's shard and of every other shard, enqueued
	// after the whale.
	others := map[string]bool{}
	same, elsewhere := 0, 0
	for i := 0; same < 6 || elsewhere < 6; i++ {
		id := fmt.Sprint("small-", i)
		if persistence.ShardOf(id, shards) == whaleShard {
			if same == 6 {
				continue
			}
			same++
		} else {
			if elsewhere == 6 {
				continue
			}
			elsewhere++
		}
		others[id] = true
		require.NoError(t, e.store.Enqueue(e.ctx, "q", []persistence.NewJob{{ID: id, Payload: []byte("x")}}))
	}

	require.Eventually(t, func() bool {
		st := e.stats("q")
		return st.Length == 0 && st.Busy == 0
	}, 10*time.Minute, 50*time.Millisecond, "drained")

	mu.Lock()
	defer mu.Unlock()
	next, lastWhale, whaleCalls := 1.0, -1, 0
	seen := map[string]int{}
	for i, ev := range events {
		if ev.id != "whale" {
			seen[ev.id] = i
			continue
		}
		whaleCalls++
		lastWhale = i
		require.Positive(t, ev.payloads, "whale call %d: payloads in score order", whaleCalls)
		require.LessOrEqual(t, ev.payloads, orderly.DefaultMaxPayloadsPerCall, "whale call %d capped", whaleCalls)
		require.Equal(t, next, ev.first, "whale call %d starts where the last ended", whaleCalls)
		next = ev.last + 1
	}
	require.Equal(t, float64(size+1), next, "every whale payload, once, in score order")
	require.GreaterOrEqual(t, whaleCalls, size/orderly.DefaultMaxPayloadsPerCall)
	require.Len(t, seen, len(others))
	for id := range others {
		require.Less(t, seen[id], lastWhale, "%s (shard %d) was served before the whale drained", id, persistence.ShardOf(id, shards))
	}
	require.Zero(t, obs.lost.Load(), "no lease lost while the whale drained")
	t.Logf("whale of %d payloads: %d calls, the last at event %d; other ids served at events %v", size, whaleCalls, lastWhale, seen)
}
