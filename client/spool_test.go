package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// flakyStore is a store whose enqueues fail while down is set, and which
// stores an enqueue but answers that it was not replicated once when
// lostReply is set (the replicated mode's WAIT fell short), then is down.
type flakyStore struct {
	persistence.Store
	down, lostReply atomic.Bool
	calls           atomic.Int64 // enqueues tried
}

var errUnreachable = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")

func (f *flakyStore) Enqueue(ctx context.Context, queue string, jobs []persistence.NewJob) error {
	f.calls.Add(1)
	if f.down.Load() {
		return errUnreachable
	}
	err := f.Store.Enqueue(ctx, queue, jobs)
	if err == nil && f.lostReply.CompareAndSwap(true, false) {
		f.down.Store(true) // and the store goes away
		return fmt.Errorf("redisstore: enqueue: %w", persistence.ErrNotReplicated)
	}
	return err
}

// payloadsOf returns the queued payloads of id, in score order.
func payloadsOf(t *testing.T, s persistence.Store, queue, id string) []string {
	t.Helper()
	info, err := s.GetJob(context.Background(), queue, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	if info.Queued != nil {
		for _, p := range info.Queued.Payloads {
			out = append(out, string(p.Data))
		}
	}
	return out
}

func newStore(t *testing.T, db *redistest.DB, window time.Duration) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(context.Background(), persistence.QueueSpec{Name: "q", Shards: 3, DedupWindow: window}))
	return s
}

// TestSpoolHoldsAnIDUntilDrained checks that a call the store cannot take
// is spooled (not an error), that later calls of its id, and every call
// while the store is down, go to the spool behind it, and that the drain
// sends them in order, after which calls go to the store again.
func TestSpoolHoldsAnIDUntilDrained(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	store := &flakyStore{Store: newStore(t, db, 0)}
	// The background drain waits an hour after its first failure, so the
	// test drains itself.
	c, err := client.NewFromStore(store, &client.Config{Spool: &client.SpoolConfig{Dir: t.TempDir(), RetryEvery: time.Hour}})
	require.NoError(t, err)
	defer c.Close()
	send := func(id, p string) client.EnqueueResult {
		t.Helper()
		res, err := c.EnqueueReport(ctx, "q", client.Job{ID: id, Payload: []byte(p)})
		require.NoError(t, err)
		return res
	}

	require.Zero(t, send("a", "1").Spooled)
	store.down.Store(true)
	require.Equal(t, 1, send("a", "2").Spooled)
	// The client's own drain tries once (the third enqueue), then waits.
	require.Eventually(t, func() bool { return store.calls.Load() >= 3 }, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Enqueue(ctx, "q", client.Job{ID: "a", Payload: []byte("3")}), "a spooled call is no error")
	st := c.Spooled()
	require.Equal(t, 2, st.Jobs)
	require.True(t, st.Down)
	require.False(t, st.Oldest.IsZero())
	require.Error(t, c.DrainSpool(ctx), "the store is still down")

	store.down.Store(false)
	require.Equal(t, 1, send("a", "4").Spooled, "behind the spooled payloads of its id")
	require.Equal(t, 1, send("b", "1").Spooled, "the last attempt failed: every call is spooled")
	require.Equal(t, []string{"1"}, payloadsOf(t, store, "q", "a"))

	require.NoError(t, c.DrainSpool(ctx))
	require.Equal(t, client.SpoolStats{}, c.Spooled())
	require.Zero(t, send("a", "5").Spooled)
	require.Equal(t, []string{"1", "2", "3", "4", "5"}, payloadsOf(t, store, "q", "a"))
	require.Equal(t, []string{"1"}, payloadsOf(t, store, "q", "b"))
}

// TestSpoolRefusals checks what is never spooled: bad input and an unknown
// queue while the store answers; and that a full spool fails the call.
func TestSpoolRefusals(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	store := &flakyStore{Store: newStore(t, db, 0)}
	c, err := client.NewFromStore(store, &client.Config{Spool: &client.SpoolConfig{Dir: t.TempDir(), MaxBytes: 400, RetryEvery: time.Hour}})
	require.NoError(t, err)
	defer c.Close()

	err = c.Enqueue(ctx, "q", client.Job{ID: ""})
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	require.ErrorIs(t, c.Enqueue(ctx, "nope", client.Job{ID: "a"}), persistence.ErrUnknownQueue)
	require.Zero(t, c.Spooled().Jobs)

	store.down.Store(true)
	require.ErrorAs(t, c.Enqueue(ctx, "q", client.Job{ID: ""}), &fe, "bad input is refused while the store is down too")
	var full error
	n := 0
	for ; n < 50 && full == nil; n++ {
		full = c.Enqueue(ctx, "q", client.Job{ID: "a", Payload: []byte("0123456789")})
	}
	require.ErrorIs(t, full, client.ErrSpoolFull)
	require.Equal(t, n-1, c.Spooled().Jobs, "every call before the full one is kept")
}

// TestSpoolReplayIsADuplicate checks the client's dedup keys: an enqueue
// stored but not replicated (persistence.ErrNotReplicated) is spooled and
// sent again, and on a queue
// with a dedup window the second copy is a duplicate, also after the first
// was processed (deleted here). Without the keys it is stored again.
func TestSpoolReplayIsADuplicate(t *testing.T) {
	for _, noKeys := range []bool{false, true} {
		db := redistest.New(t)
		ctx := context.Background()
		store := &flakyStore{Store: newStore(t, db, time.Hour)}
		c, err := client.NewFromStore(store, &client.Config{Spool: &client.SpoolConfig{Dir: t.TempDir(), RetryEvery: time.Hour, NoDedupKeys: noKeys}})
		require.NoError(t, err)
		store.lostReply.Store(true)
		res, err := c.EnqueueReport(ctx, "q", client.Job{ID: "a", Payload: []byte("1")})
		require.NoError(t, err)
		require.Equal(t, 1, res.Spooled)
		require.Equal(t, []string{"1"}, payloadsOf(t, store, "q", "a"), "stored before its answer was lost")
		_, err = store.DeleteJob(ctx, "q", "a") // as if it was processed
		require.NoError(t, err)
		store.down.Store(false)
		require.NoError(t, c.DrainSpool(ctx))
		if noKeys {
			require.Equal(t, []string{"1"}, payloadsOf(t, store, "q", "a"), "without a key the replay is stored again")
		} else {
			require.Empty(t, payloadsOf(t, store, "q", "a"), "the replay is a duplicate")
		}
		require.NoError(t, c.Close())
	}
}

// TestSpoolRedisRestart checks the spool against a real Redis that stops
// and starts again: the calls made meanwhile are spooled, the client's own
// drain sends them once Redis is back, in order per id; a second client on
// the same directory is refused.
func TestSpoolRedisRestart(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	ctx := context.Background()
	dir := t.TempDir()
	c, err := client.Open(srv.URL(), &client.Config{Timeout: time.Second,
		Spool: &client.SpoolConfig{Dir: dir, RetryEvery: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond}})
	require.NoError(t, err)
	defer c.Close()
	store, err := redisstore.New(srv.Client(t), nil)
	require.NoError(t, err)
	require.NoError(t, store.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 3}))

	_, err = client.Open(srv.URL(), &client.Config{Spool: &client.SpoolConfig{Dir: dir}})
	require.ErrorIs(t, err, client.ErrSpoolLocked)

	require.NoError(t, c.Enqueue(ctx, "q", client.Job{ID: "a", Payload: []byte("1")}))
	srv.Stop(t)
	for _, j := range []client.Job{{ID: "a", Payload: []byte("2")}, {ID: "b", Payload: []byte("1")}, {ID: "a", Payload: []byte("3")}} {
		res, err := c.EnqueueReport(ctx, "q", j)
		require.NoError(t, err)
		require.Equal(t, 1, res.Spooled)
	}
	require.Equal(t, 3, c.Spooled().Jobs)
	srv.Start(t)
	require.Eventually(t, func() bool { return c.Spooled().Jobs == 0 }, 30*time.Second, 20*time.Millisecond)
	require.NoError(t, c.Enqueue(ctx, "q", client.Job{ID: "a", Payload: []byte("4")}))
	require.Equal(t, []string{"1", "2", "3", "4"}, payloadsOf(t, store, "q", "a"))
	require.Equal(t, []string{"1"}, payloadsOf(t, store, "q", "b"))
}
