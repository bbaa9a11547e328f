package shard_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// An idle actor registered with the node's Poller is woken by it when its
// shard has work nobody announced (no Wake): it fetches as after a notice,
// and that fetch looks at the outbox too (the poll may have found entries
// nobody relayed).
func TestPollerWakesAnIdleShardWithUnannouncedWork(t *testing.T) {
	t.Parallel()
	store := &fakeStore{}
	h := newHarness(t, store)
	h.polled, h.idlePoll = true, 500*time.Millisecond
	got := make(chan []string, 4)
	h.start(func(_ context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		var ids []string
		for _, j := range b.Jobs {
			ids = append(ids, j.ID)
		}
		got <- ids
		return nil, nil
	})
	ref := persistence.ShardRef{Queue: "q", Shard: 1}
	h.eventually("the idle shard registered with the poller", func() bool { return h.poller.Registered(ref) })
	require.Equal(t, 1, store.count("advance"))

	store.set(func(s *fakeStore) { s.jobs = jobs("a") })
	h.advanceTo(500 * time.Millisecond)
	require.Equal(t, []string{"a"}, wait(h, got, "the handler call"))
	require.Equal(t, 1, store.count("poll"))
	reqs := store.requests()
	require.GreaterOrEqual(t, len(reqs), 2)
	require.Positive(t, reqs[1].Fetch)
	require.True(t, reqs[1].CheckOutbox, "the fetch after a poll looks at the outbox")
	h.eventually("idle again, registered again", func() bool { return h.poller.Registered(ref) })
}

// With a Poller, an idle actor arms no poll timer of its own and makes no
// Advance while the poller finds nothing; the poller asks about it every
// interval.
func TestIdleShardDoesNotPollOnItsOwnWithAPoller(t *testing.T) {
	t.Parallel()
	store := &fakeStore{}
	h := newHarness(t, store)
	h.polled, h.idlePoll = true, 200*time.Millisecond
	h.start(func(context.Context, *persistence.Batch) ([]persistence.Failure, error) { return nil, nil })
	ref := persistence.ShardRef{Queue: "q", Shard: 1}
	h.eventually("the idle shard registered with the poller", func() bool { return h.poller.Registered(ref) })
	at := func(d time.Duration) int {
		return len(slices.DeleteFunc(h.clock.Timers(), func(t time.Time) bool { return !t.Equal(t0.Add(d)) }))
	}
	require.Equal(t, 1, at(200*time.Millisecond), "one timer at the idle poll: the poller's")

	for i := 1; i <= 4; i++ { // before the first renewal, at 1 s
		h.advanceTo(time.Duration(i) * 200 * time.Millisecond)
		h.eventually("the poller asked", func() bool { return store.count("poll") == i })
		require.Equal(t, 1, store.count("advance"), "no Advance of its own at poll %d", i)
	}
	require.True(t, h.poller.Registered(ref))
}
