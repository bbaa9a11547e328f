package orderly_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
)

// A counter kept in state: each payload adds one. A failed id commits
// nothing of its call; a state over MaxStateBytes fails its id.
func TestStatefulCounter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	attempts := map[string]int{}
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "counters", Shards: 2, BatchSize: 10, State: true, MaxStateBytes: 4,
		RetryIn: orderly.LinearRetry(10 * time.Millisecond),
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			failed := map[string]error{}
			for _, j := range b.Jobs {
				assert.True(t, j.Stateful())
				attempts[j.ID]++
				n, _ := strconv.Atoi(string(j.State()))
				if j.State() != nil {
					assert.Positive(t, j.StateVersion())
				}
				j.SetState([]byte(strconv.Itoa(n + len(j.Payloads))))
				if j.ID == "flaky" && attempts[j.ID] == 1 {
					failed[j.ID] = errors.New("try again")
				}
				if j.ID == "big" {
					j.SetState([]byte("12345"))
				}
			}
			return orderly.FailIDs(failed)
		},
	}}})
	for round := range 3 {
		e.enqueue("counters", client.Job{ID: "a", Payload: []byte("p" + strconv.Itoa(round))},
			client.Job{ID: "flaky", Payload: []byte("p" + strconv.Itoa(round))})
		require.Eventually(t, func() bool {
			st, err := e.store.GetState(e.ctx, "counters", "a")
			require.NoError(t, err)
			return string(st.Data) == strconv.Itoa(round+1)
		}, 10*time.Second, 10*time.Millisecond)
	}
	require.Eventually(t, func() bool {
		st, _ := e.store.GetState(e.ctx, "counters", "flaky")
		return string(st.Data) == "3"
	}, 10*time.Second, 10*time.Millisecond, "the failed call added nothing")

	e.enqueue("counters", client.Job{ID: "big"})
	require.Eventually(t, func() bool {
		info, err := e.store.GetJob(e.ctx, "counters", "big")
		return err == nil && info.Queued != nil && strings.Contains(info.Queued.Error, "max_state_bytes")
	}, 10*time.Second, 10*time.Millisecond)
	st, err := e.store.GetState(e.ctx, "counters", "big")
	require.NoError(t, err)
	require.Equal(t, persistence.State{}, st)
}

// An external compare-and-set while the id is in a handler call: the call
// commits nothing for it, and the id is handed over again with the new
// state (no lost update).
func TestStatefulExternalWriteWins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var seen []string
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, State: true,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			j := b.Jobs[0]
			mu.Lock()
			seen = append(seen, string(j.State()))
			first := len(seen) == 1
			mu.Unlock()
			if first {
				close(entered)
				<-release
			}
			n, _ := strconv.Atoi(string(j.State()))
			j.SetState([]byte(strconv.Itoa(n + 1)))
			return nil
		},
	}}})
	e.enqueue("q", client.Job{ID: "c"})
	<-entered
	v, err := e.store.SetState(e.ctx, "q", "c", []byte("100"), 0, 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), v)
	close(release)
	require.Eventually(t, func() bool {
		st, _ := e.store.GetState(e.ctx, "q", "c")
		return string(st.Data) == "101" && st.Version == 2
	}, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"", "100"}, seen)
	require.EqualValues(t, 1, e.stats("q").Processed)
	require.EqualValues(t, 0, e.stats("q").Failed)
}

// A timer set by the handler brings the id back with its state and no
// payload; the idle shard wakes up for it.
func TestStatefulTimer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type seen struct {
		payloads int
		state    string
		version  int64
	}
	fired := make(chan seen, 1)
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "orders", Shards: 1, State: true,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				if j.Timer() {
					fired <- seen{len(j.Payloads), string(j.State()), j.StateVersion()}
					j.DeleteState()
					continue
				}
				j.SetState([]byte("unpaid"))
				j.SetTimer(time.Now().Add(300 * time.Millisecond))
			}
			return nil
		},
	}}})
	e.enqueue("orders", client.Job{ID: "order-1", Payload: []byte("created")})
	select {
	case j := <-fired:
		require.Equal(t, seen{0, "unpaid", 1}, j)
	case <-time.After(10 * time.Second):
		t.Fatal("the timer did not fire")
	}
	require.Eventually(t, func() bool {
		st, err := e.store.GetState(e.ctx, "orders", "order-1")
		require.NoError(t, err)
		return st.Version == 2 && st.Deleted
	}, 10*time.Second, 10*time.Millisecond)
}

// A busy outside writer that changes an id's state during each of its
// handler calls does not drive the handler in a tight loop: each conflict
// costs exactly one more call, and the id waits before it, longer after
// each conflict in a row (docs/contract.md §11: from 5-10 ms, doubling).
// Checked on the recorded calls: their number, and the gap between the
// starts of consecutive calls against the shortest delay each conflict
// allows (a slow machine only widens the gaps).
func TestConflictingIDBacksOff(t *testing.T) {
	t.Parallel()
	const conflicts = 6
	e := newEnv(t)
	var mu sync.Mutex // guards starts
	var starts []time.Time
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, State: true,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			j := b.Jobs[0]
			mu.Lock()
			starts = append(starts, time.Now())
			n := len(starts)
			mu.Unlock()
			if n <= conflicts {
				// The outside writer wins while the call runs.
				if _, err := e.store.SetState(ctx, "q", j.ID, []byte("outside"+strconv.Itoa(n)), j.StateVersion(), 0); err != nil {
					return err
				}
			}
			j.SetState([]byte("handler"))
			return nil
		},
	}}})
	e.enqueue("q", client.Job{ID: "hot"})
	require.Eventually(t, func() bool {
		st, _ := e.store.GetState(e.ctx, "q", "hot")
		return string(st.Data) == "handler"
	}, 20*time.Second, 10*time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, starts, conflicts+1, "one call per conflict, then the one that commits")
	require.EqualValues(t, 1, e.stats("q").Processed)
	require.EqualValues(t, 0, e.stats("q").Failed, "a conflict is not a failure")
	gaps := make([]string, 0, len(starts)-1)
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]).Round(100*time.Microsecond).String())
	}
	t.Logf("%d conflicts, %d calls; gaps between calls: %v", conflicts, len(starts), gaps)
	for i := 1; i < len(starts); i++ {
		least := (10 * time.Millisecond << (i - 1)) / 2 // after i-1 conflicts in a row
		gap := starts[i].Sub(starts[i-1])
		require.GreaterOrEqual(t, gap, least, "call %d came %s after call %d, before the delay of conflict %d", i+1, gap, i, i)
	}
}
