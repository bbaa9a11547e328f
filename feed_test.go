package orderly_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
)

// The change feed carries a stateful queue's committed changes, the
// handler's and those from outside, in version order per id; client.Feed
// follows it from the oldest entry and waits for new ones.
func TestFeedFollowsCommittedChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "counters", Shards: 2, State: true,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				n, _ := strconv.Atoi(string(j.State()))
				j.SetState([]byte(strconv.Itoa(n + len(j.Payloads))))
			}
			return nil
		},
	}}})
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	next, stop := iterPull(e.client.Feed(ctx, "counters", persistence.FeedOldest))
	defer func() {
		cancel()
		stop()
	}()

	e.enqueue("counters", client.Job{ID: "a", Payload: []byte("1")})
	got := next(t)
	require.Equal(t, "a", got.ID)
	require.Equal(t, int64(1), got.Version)
	require.Equal(t, "1", string(got.Data))

	// A compare-and-set from outside is on the feed too; then the handler's
	// next commit.
	_, err := e.client.SetState(e.ctx, "counters", "a", []byte("10"), 1)
	require.NoError(t, err)
	got = next(t)
	require.Equal(t, int64(2), got.Version)
	require.Equal(t, "10", string(got.Data))
	e.enqueue("counters", client.Job{ID: "a", Payload: []byte("2")})
	got = next(t)
	require.Equal(t, int64(3), got.Version)
	require.Equal(t, "11", string(got.Data))
}

// iterPull pulls a feed sequence, failing the test on an error. It skips
// what a consumer of the feed skips: an entry whose (id, version) it has
// seen or passed (the feed is at least once: two relays of one outbox may
// both publish an entry).
func iterPull(seq func(func(client.FeedEntry, error) bool)) (func(*testing.T) client.FeedEntry, func()) {
	ch := make(chan client.FeedEntry)
	errs := make(chan error, 1)
	done := make(chan struct{})
	finished := make(chan struct{})
	seen := map[string]int64{}
	go func() {
		defer close(finished)
		seq(func(e client.FeedEntry, err error) bool {
			if err != nil {
				errs <- err
				return false
			}
			if e.Version <= seen[e.ID] {
				return true
			}
			seen[e.ID] = e.Version
			select {
			case ch <- e:
				return true
			case <-done:
				return false
			}
		})
	}()
	next := func(t *testing.T) client.FeedEntry {
		t.Helper()
		select {
		case e := <-ch:
			return e
		case err := <-errs:
			t.Fatalf("feed: %v", err)
		case <-time.After(15 * time.Second):
			t.Fatal("no feed entry")
		}
		return client.FeedEntry{}
	}
	return next, func() { close(done); <-finished }
}

// recordingStore records the queue registrations of a node.
type recordingStore struct {
	persistence.Store
	mu    sync.Mutex // guards specs
	specs map[string]persistence.QueueSpec
}

func (r *recordingStore) RegisterQueue(ctx context.Context, spec persistence.QueueSpec) error {
	r.mu.Lock()
	r.specs[spec.Name] = spec
	r.mu.Unlock()
	return r.Store.RegisterQueue(ctx, spec)
}

// A node registers each stateful queue with its change feed bound (the
// default, a set one, none), which outside writes publish with on shards
// no owner served yet (docs/contract.md §11); other queues register none.
func TestNodeRegistersFeedBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := &recordingStore{Store: e.store, specs: map[string]persistence.QueueSpec{}}
	noop := func(context.Context, *orderly.Batch) error { return nil }
	cfg := orderly.Config{Name: "feeds", Logger: testLogger(t), Workers: []orderly.Worker{
		{Queue: "dflt", Shards: 1, State: true, Handler: noop},
		{Queue: "short", Shards: 1, State: true, FeedMaxLen: 7, Handler: noop},
		{Queue: "off", Shards: 1, State: true, FeedMaxLen: orderly.NoFeed, Handler: noop},
		{Queue: "plain", Shards: 1, Handler: noop},
	}}
	n, err := orderly.NewNode(rec, &cfg)
	require.NoError(t, err)
	require.NoError(t, n.Start(e.ctx))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, n.Stop(ctx))
	}()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, map[string]persistence.QueueSpec{
		"dflt":  {Name: "dflt", Shards: 1, Stateful: true, FeedMaxLen: orderly.DefaultFeedMaxLen},
		"short": {Name: "short", Shards: 1, Stateful: true, FeedMaxLen: 7},
		"off":   {Name: "off", Shards: 1, Stateful: true, FeedMaxLen: 0},
		"plain": {Name: "plain", Shards: 1},
	}, rec.specs)
}
