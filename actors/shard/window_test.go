package shard_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/persistence"
)

// fetches returns the Fetch of every request that asked for ids, and the
// MaxCalls each carried.
func fetches(store *fakeStore) (sizes, maxCalls []int) {
	for _, r := range store.requests() {
		if r.Fetch > 0 {
			sizes = append(sizes, r.Fetch)
			maxCalls = append(maxCalls, r.MaxCalls)
		}
	}
	return sizes, maxCalls
}

func numbered(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return ids
}

// Under a backlog the window doubles after each full window of quick calls,
// up to MaxPrefetch; a short fetch halves it and an empty one brings it
// back to Prefetch. Windows longer than Prefetch share the deadline bound
// of a window of Prefetch ids (MaxCalls).
func TestWindowGrowsUnderABacklogAndShrinksWhenIdle(t *testing.T) {
	t.Parallel()
	store := &fakeStore{jobs: jobs(numbered("a", 400)...)}
	h := newHarness(t, store)
	h.prefetch, h.maxPrefetch, h.maxPayloads = 10, 100, 1000
	handled := make(chan string, 1000)
	h.start(func(_ context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		for _, j := range b.Jobs {
			handled <- j.ID
		}
		return nil, nil
	})
	h.eventually("the backlog handled and the shard idle", func() bool { return contains(h.seen(), "return") })
	require.Len(t, handled, 400)
	sizes, maxCalls := fetches(store)
	require.Equal(t, []int{10, 20, 40, 80, 100, 100, 100, 50}, sizes,
		"doubles while full (10+20+40+80+100+100 = 350), the fetch of 100 finds 50, the next finds none")
	require.Equal(t, []int{0, 10, 10, 10, 10, 10, 10, 10}, maxCalls, "a longer window counts ten calls of deadline")

	// Idle, then new work: the window starts again at Prefetch.
	store.set(func(s *fakeStore) { s.jobs = jobs(numbered("b", 30)...) })
	h.send(shard.Wake{})
	h.eventually("the new jobs handled", func() bool { return len(handled) == 430 })
	h.eventually("settled", func() bool {
		sizes, _ = fetches(store)
		return len(sizes) >= 11
	})
	require.Equal(t, []int{10, 20, 40}, sizes[8:11], "grows again from Prefetch")
}

// A window grows only while its calls are quick, and one whose calls run
// long is bounded by time: its calls past the ones a window of Prefetch ids
// makes start only while half a call timeout of that window's bound is
// left; the rest goes back untouched, and the window is Prefetch again.
func TestLongWindowIsBoundedByTime(t *testing.T) {
	t.Parallel()
	ids := append([]string{"a0", "a1", "b0", "b1", "b2", "b3"}, numbered("s", 8)...)
	store := &fakeStore{jobs: jobs(append(ids, "z0", "z1", "z2")...)}
	h := newHarness(t, store)
	h.prefetch, h.maxPrefetch, h.maxPayloads = 2, 8, 1000
	h.callTimeout = 400 * time.Millisecond
	h.start(func(_ context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		if b.Jobs[0].ID[0] == 's' {
			h.clock.Advance(250 * time.Millisecond) // a slow call
		}
		return nil, nil
	})
	h.eventually("the backlog handled and the shard idle", func() bool { return contains(h.seen(), "return") })
	var skipped []string
	for _, r := range store.requests() {
		skipped = append(skipped, r.Skipped...)
	}
	require.Equal(t, []string{"s003", "s004", "s005", "s006", "s007"}, skipped,
		"bound 2 x 400 ms: calls start until 600 ms into the window (s000 at 0, s001 at 250, s002 at 500)")
	sizes, maxCalls := fetches(store)
	require.Equal(t, 2, maxCalls[2], "the window of 8 counts two calls of deadline")
	require.Equal(t, []int{2, 4, 8, 2}, sizes[:4], "slow calls bring the window back to Prefetch")
	require.True(t, h.logs.has("long window ran out of time"))
}

// A window whose calls all run at once (ConcurrentCalls, a pull queue's
// waiting calls) takes about as long whatever its size: it counts as quick
// while it takes no longer than the windows of Prefetch ids it stands for
// would take together when quick, so that slow calls (a loaded node, a
// worker's round trip) do not keep it at Prefetch ids; calls slower than
// that bring it back.
func TestWindowOfConcurrentCallsGrowsWhileItsTurnIsShortPerWindow(t *testing.T) {
	t.Parallel()
	store := &fakeStore{jobs: jobs(numbered("a", 400)...)}
	h := newHarness(t, store)
	h.prefetch, h.maxPrefetch, h.maxPayloads, h.concurrent = 10, 100, 1000, 100
	h.callTimeout = time.Minute
	var mu sync.Mutex // the calls of a window advance the clock one at a time
	h.start(func(_ context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		mu.Lock()
		defer mu.Unlock()
		switch b.Jobs[0].ID {
		case "a000", "a010", "a030", "a070", "a150":
			// One call of each window takes 30 ms: longer than a quick
			// window of Prefetch ids, and shorter than the ones this
			// window stands for.
			h.clock.Advance(30 * time.Millisecond)
		case "a250":
			// 250 ms: longer than ten quick windows of Prefetch ids.
			h.clock.Advance(250 * time.Millisecond)
		}
		return nil, nil
	})
	h.eventually("the backlog handled and the shard idle", func() bool { return contains(h.seen(), "return") })
	sizes, _ := fetches(store)
	require.Equal(t, []int{10, 10, 10, 20, 40, 80, 100, 10, 20, 40, 80, 40}, sizes,
		"30 ms is slow for a window of 10 (a000, a010), quick for 20 and more (a030, a070, a150); 250 ms is slow for 100 (a250)")
}

// A shard whose permit goes to another shard (PermitWait: the node's shards
// compete for permits) keeps its window at Prefetch, so that turns between
// shards stay as short as before.
func TestWindowStaysShortWhileShardsCompete(t *testing.T) {
	t.Parallel()
	store := &fakeStore{jobs: jobs(numbered("a", 40)...)}
	h := newHarness(t, store)
	h.prefetch, h.maxPrefetch, h.maxPayloads = 2, 16, 1000
	h.keep = false
	h.start(func(context.Context, *persistence.Batch) ([]persistence.Failure, error) { return nil, nil })
	for i := 1; i <= 5; i++ {
		h.eventually("the permit yielded", func() bool { return count(h.seen(), "yield") == i })
		h.send(shard.PermitGranted{}) // the node's turn comes back to this shard
	}
	h.eventually("the last window settled", func() bool { return count(h.seen(), "yield") == 6 })
	sizes, _ := fetches(store)
	require.Equal(t, []int{2, 2, 2, 2, 2, 2}, sizes, "full windows of quick calls, and yet no growth")
}

func count(events []string, e string) int {
	n := 0
	for _, x := range events {
		if x == e {
			n++
		}
	}
	return n
}
