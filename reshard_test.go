package orderly_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/persistence"
)

// A queue resharded up and then down while a node serves it and producers
// enqueue (docs/contract.md §3.17): the node serves the new shards and
// drains the old ones by itself, and the recorded history shows, per id,
// no overlapping calls, score order and nothing lost.
func TestReshardWhileANodeServes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var rec history.Recorder
	var rmu sync.Mutex // guards rng
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "rs", Shards: 3, BatchSize: 2,
		RetryIn: orderly.LinearRetry(2 * time.Millisecond),
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			start := time.Now()
			rmu.Lock()
			fail := map[string]error{}
			for _, j := range b.Jobs {
				if rng.IntN(20) == 0 {
					fail[j.ID] = errors.New("random failure")
				}
			}
			sleep := time.Duration(rng.IntN(500)) * time.Microsecond
			rmu.Unlock()
			time.Sleep(sleep)
			end := time.Now()
			for _, j := range b.Jobs {
				c := history.Call{ID: j.ID, Node: "n", Delivery: b.Delivery, Start: start, End: end, Acked: fail[j.ID] == nil}
				for _, p := range j.Payloads {
					c.Payloads = append(c.Payloads, history.Payload{Data: string(p.Data), Score: p.Score})
				}
				rec.Add(c)
			}
			return orderly.FailIDs(fail)
		},
	}}})

	const ids, per = 30, 150
	enqueued := map[string][]string{}
	var sent atomic.Int64
	var wg sync.WaitGroup
	for i := range ids {
		id := fmt.Sprintf("order-%d", i)
		for k := range per {
			enqueued[id] = append(enqueued[id], fmt.Sprintf("%s/%03d", id, k))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range per {
				require.NoError(t, e.client.Enqueue(e.ctx, "rs", client.Job{ID: id, Payload: []byte(fmt.Sprintf("%s/%03d", id, k)), Score: client.Score(float64(k))}))
				sent.Add(1)
				time.Sleep(time.Duration(20+k%10) * time.Millisecond)
			}
		}()
	}
	produced := make(chan struct{})
	go func() { wg.Wait(); close(produced) }()
	for _, n := range []int{5, 2} {
		require.Eventually(t, func() bool {
			select {
			case <-produced:
				t.Log("the producers were done before the reshard")
				return true
			default:
				return sent.Load() > int64(ids*per/5)
			}
		}, 30*time.Second, time.Millisecond)
		sh, err := e.store.Reshard(e.ctx, "rs", n)
		require.NoError(t, err)
		require.True(t, sh.Resharding())
		listings := 0
		require.Eventually(t, func() bool {
			st, err := e.store.ReshardStatus(e.ctx, "rs")
			if err == nil && st.Shape.Resharding() {
				// Listings work throughout, each id once.
				listings++
				page, err := e.store.ListJobs(e.ctx, "rs", persistence.ListOptions{Order: persistence.OrderID, Limit: 1000})
				if assert.NoError(t, err, "a listing while the reshard runs") {
					seen := map[string]bool{}
					for _, j := range page.Jobs {
						assert.False(t, seen[j.ID], "%s listed twice", j.ID)
						seen[j.ID] = true
					}
				}
			}
			return err == nil && !st.Shape.Resharding()
		}, 60*time.Second, 10*time.Millisecond, "the node drains the old shards and ends the reshard")
		t.Logf("reshard to %d: %d listings while it ran", n, listings)
		sent.Store(0)
	}
	wg.Wait()
	if !waitFor(func() bool { st := e.stats("rs"); return st.Length == 0 && st.Busy == 0 }, 60*time.Second) {
		owners, _ := e.store.ShardOwners(e.ctx, "rs")
		shape, _ := e.store.Shape(e.ctx, "rs")
		t.Fatalf("the queue was not drained: %+v; shape %s, owners %+v", e.stats("rs"), shape, owners)
	}
	sh, err := e.store.Shape(e.ctx, "rs")
	require.NoError(t, err)
	require.Equal(t, 2, sh.Current.Count)
	page, err := e.store.ListMorgue(e.ctx, "rs", persistence.ListOptions{Limit: 1000})
	require.NoError(t, err)
	morgue := map[string][]string{}
	for _, m := range page.Entries {
		for _, p := range m.Payloads {
			morgue[m.ID] = append(morgue[m.ID], string(p.Data))
		}
	}
	rep := history.Check(rec.Calls(), enqueued, morgue)
	t.Log(rep.String())
	require.True(t, rep.OK(), rep.String())
	require.Equal(t, ids*per, rep.Acked+morgueCount(morgue))
}

// waitFor reports whether f became true within d.
func waitFor(f func() bool, d time.Duration) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if f() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
