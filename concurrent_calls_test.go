package orderly_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/history"
)

// overlap counts, per shard, the handler calls running at once, and keeps
// the most seen.
type overlap struct {
	mu      sync.Mutex // guards running and peak
	running map[int]int
	peak    map[int]int
}

func (o *overlap) enter(shard int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.running == nil {
		o.running, o.peak = map[int]int{}, map[int]int{}
	}
	o.running[shard]++
	o.peak[shard] = max(o.peak[shard], o.running[shard])
}

func (o *overlap) leave(shard int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running[shard]--
}

func (o *overlap) most() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := 0
	for _, p := range o.peak {
		m = max(m, p)
	}
	return m
}

// With ConcurrentCalls, the calls of one shard's window overlap, each over
// its own ids: 20 ids x 200 payloads with rising scores, random failures
// and random handler times; the recorded history shows, per id, no
// overlapping calls, score order and nothing lost, while calls of one
// shard did overlap.
func TestConcurrentCallsOverlapWithinAShardNeverWithinAnID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var rec history.Recorder
	var shards overlap
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var rmu sync.Mutex // guards rng
	rng := rand.New(rand.NewPCG(seed, 2))
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "cc", Shards: 2, BatchSize: 1, Prefetch: 10, MaxPrefetch: 20, ConcurrentCalls: 8,
		RetryIn: orderly.LinearRetry(2 * time.Millisecond),
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			shards.enter(b.Shard)
			defer shards.leave(b.Shard)
			start := time.Now()
			rmu.Lock()
			fail := map[string]error{}
			for _, j := range b.Jobs {
				if rng.IntN(10) == 0 {
					fail[j.ID] = errors.New("random failure")
				}
			}
			sleep := time.Duration(rng.IntN(2000)) * time.Microsecond
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

	rep := drainRising(t, e, &rec, "cc", 20, 200)
	require.Zero(t, rep.Duplicates, "no crash, so no redelivery")
	require.Greater(t, shards.most(), 1, "the calls of a shard's window never overlapped")
}

// A cancel (docs/contract.md §3.13) stops only the concurrent call that
// holds the id; the window's other calls, running beside it, finish and
// are acknowledged.
func TestConcurrentCallsCancelStopsOnlyItsCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	others := make(chan struct{})
	started := make(chan string, 2)
	b := newBlocker("a")
	var mu sync.Mutex
	done := map[string]bool{}
	e.start(orderly.Config{Workers: []orderly.Worker{{Queue: "cx", Shards: 1, BatchSize: 1, Prefetch: 3, ConcurrentCalls: 3, Timeout: 20 * time.Second,
		Handler: func(ctx context.Context, batch *orderly.Batch) error {
			if batch.Jobs[0].ID == "a" {
				return b.handle(ctx, batch)
			}
			// b and c wait until a's call was cancelled: they ran beside it.
			started <- batch.Jobs[0].ID
			select {
			case <-others:
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			done[batch.Jobs[0].ID] = true
			mu.Unlock()
			return nil
		}}}})
	e.enqueue("cx", client.Job{ID: "a", Payload: []byte("1")}, client.Job{ID: "b", Payload: []byte("2")}, client.Job{ID: "c", Payload: []byte("3")})
	select {
	case <-b.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call holding a never started")
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the calls of b and c did not start beside a's")
		}
	}
	_, err := e.client.Cancel(e.ctx, "cx", "a")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.cause != nil
	}, 10*time.Second, 5*time.Millisecond)
	require.ErrorIs(t, b.cause, orderly.ErrCancelled)
	close(others)
	require.Eventually(t, func() bool { return e.stats("cx").Processed == 2 }, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	require.Equal(t, map[string]bool{"b": true, "c": true}, done, "the other calls of the window ran beside the cancelled one")
	mu.Unlock()
	require.Equal(t, 1, b.seen("a"), "a cancelled id is never handed over again")
}
