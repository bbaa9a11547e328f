package orderly_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A handler that hangs past its timeout: the batch fails with a timeout
// error and is retried; the shard keeps going; no goroutine leaks (TestMain
// checks).
func TestFaultHandlerTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var hangs atomic.Int32
	var others atomic.Int32
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, MaxRetryCount: 2, Timeout: 100 * time.Millisecond, RetryIn: orderly.LinearRetry(10 * time.Millisecond),
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			if b.Jobs[0].ID == "hang" {
				hangs.Add(1)
				<-ctx.Done()
				return ctx.Err()
			}
			others.Add(1)
			return nil
		},
	}}})
	e.enqueue("q", client.Job{ID: "hang"}, client.Job{ID: "a"}, client.Job{ID: "b"})
	require.Eventually(t, func() bool { return e.stats("q").MorgueLength == 1 }, 10*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 3, hangs.Load(), "tried max_retry_count+1 times")
	require.EqualValues(t, 2, others.Load(), "the other ids of the shard kept flowing")
	page, err := e.store.ListMorgue(e.ctx, "q", persistence.ListOptions{})
	require.NoError(t, err)
	require.Contains(t, page.Entries[0].Error, "timed out after 100ms")
}

// A poison payload that always fails ends in the morgue after
// max_retry_count, and the other ids of the same shard keep flowing.
func TestFaultPoisonPayload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, MaxRetryCount: 3, RetryIn: orderly.LinearRetry(5 * time.Millisecond),
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			failed := map[string]error{}
			for _, j := range b.Jobs {
				if j.ID == "poison" {
					failed[j.ID] = errors.New("cannot parse payload")
				}
			}
			return orderly.FailIDs(failed)
		},
	}}})
	var jobs []client.Job
	for i := range 50 {
		jobs = append(jobs, client.Job{ID: fmt.Sprint("ok-", i)})
		if i == 10 {
			jobs = append(jobs, client.Job{ID: "poison", Payload: []byte("{broken")})
		}
	}
	e.enqueue("q", jobs...)
	require.Eventually(t, func() bool {
		st := e.stats("q")
		return st.Processed == 50 && st.MorgueLength == 1 && st.Length == 0
	}, 10*time.Second, 10*time.Millisecond)
	page, err := e.store.ListMorgue(e.ctx, "q", persistence.ListOptions{})
	require.NoError(t, err)
	require.Equal(t, "poison", page.Entries[0].ID)
	require.Equal(t, "cannot parse payload", page.Entries[0].Error)
	require.Equal(t, "{broken", string(page.Entries[0].Payloads[0].Data))
	require.EqualValues(t, 4, e.stats("q").Failed)
}

// A handler that ignores its context after the node lost its lease (Redis
// unreachable): the documented residue of the exclusivity guarantee. The
// node cancels the context before the lease can expire, and logs loudly
// while the handler keeps running.
func TestFaultHandlerIgnoringItsContext(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	proxy := redistest.NewProxy(t, db.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr, DialTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	store, err := redisstore.New(rdb, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	logs := &nodetest.LogBuffer{}
	started := make(chan struct{})
	release := make(chan struct{})
	var cancelledAt atomic.Int64
	n, err := orderly.NewNode(store, &orderly.Config{
		Name: "stubborn", LeaseTTL: time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Workers: []orderly.Worker{{Queue: "q", Shards: 1, Handler: func(ctx context.Context, b *orderly.Batch) error {
			close(started)
			<-ctx.Done()
			cancelledAt.Store(time.Now().UnixNano())
			<-release // ignores the cancellation
			return nil
		}}},
	})
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.StopAndCancel(ctx)
	}()
	require.NoError(t, store.Enqueue(context.Background(), "q", []persistence.NewJob{{ID: "a"}}))
	<-started
	cut := time.Now()
	proxy.Cut()
	require.Eventually(t, func() bool { return cancelledAt.Load() != 0 }, 5*time.Second, time.Millisecond)
	t.Logf("context cancelled %s after Redis became unreachable (lease TTL 1s)", time.Unix(0, cancelledAt.Load()).Sub(cut).Round(time.Millisecond))
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "handler ignores its cancelled context") }, 5*time.Second, 10*time.Millisecond)
	close(release)
}

// Every Go handler call has a deadline on its context, also without
// Worker.Timeout (DefaultCallTimeout), and the worker's Timeout when set.
func TestHandlerContextAlwaysHasADeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	left := make(chan time.Duration, 4)
	handler := func(ctx context.Context, _ *orderly.Batch) error {
		d, ok := ctx.Deadline()
		if !ok {
			left <- -1
			return nil
		}
		left <- time.Until(d)
		return nil
	}
	e.start(orderly.Config{Workers: []orderly.Worker{
		{Queue: "default", Shards: 1, Handler: handler},
		{Queue: "short", Shards: 1, Timeout: 5 * time.Second, Handler: handler},
	}})
	next := func() time.Duration {
		select {
		case d := <-left:
			return d
		case <-time.After(30 * time.Second):
			t.Fatal("no handler call")
			return 0
		}
	}
	e.enqueue("default", client.Job{ID: "a"})
	d := next()
	require.True(t, d > orderly.DefaultCallTimeout-10*time.Second && d <= orderly.DefaultCallTimeout, "deadline %s away", d)
	e.enqueue("short", client.Job{ID: "b"})
	d = next()
	require.True(t, d > 0 && d <= 5*time.Second, "deadline %s away", d)
}

// A handler that ignores its context and runs past its deadline shows in
// the node's status (StuckSince) until it returns.
func TestStuckHandlerShowsInStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	release := make(chan struct{})
	n := e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, Timeout: 200 * time.Millisecond,
		Handler: func(context.Context, *orderly.Batch) error { <-release; return nil },
	}}})
	stuck := func() bool {
		st, err := n.Status(context.Background())
		return err == nil && len(st.Shards) == 1 && !st.Shards[0].StuckSince.IsZero()
	}
	e.enqueue("q", client.Job{ID: "a"})
	require.Eventually(t, stuck, 30*time.Second, 50*time.Millisecond, "reported stuck")
	close(release)
	require.Eventually(t, func() bool { return !stuck() }, 30*time.Second, 50*time.Millisecond, "cleared once it returned")
}

// Unscored payloads of one id sent in one client call reach the handler in
// the order they were sent, not in byte order.
func TestUnscoredPayloadsKeepSendOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	got := make(chan []string, 4)
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1,
		Handler: func(_ context.Context, b *orderly.Batch) error {
			var ps []string
			for _, p := range b.Jobs[0].Payloads {
				ps = append(ps, string(p.Data))
			}
			got <- ps
			return nil
		},
	}}})
	e.enqueue("q", client.Job{ID: "order-1", Payload: []byte("z-created")},
		client.Job{ID: "order-1", Payload: []byte("a-paid")}, client.Job{ID: "order-1", Payload: []byte("m-shipped")})
	var seen []string
	for len(seen) < 3 {
		select {
		case ps := <-got:
			seen = append(seen, ps...)
		case <-time.After(30 * time.Second):
			t.Fatalf("saw only %v", seen)
		}
	}
	require.Equal(t, []string{"z-created", "a-paid", "m-shipped"}, seen)
}

// A slow link to Redis (0.75 s round trip) costs no lease at the default
// lease TTL (3 s): renewals are spaced from their send time and the margin
// follows the round trip, and the node opens its connections before it
// serves (a lease call on a new connection would wait two more round trips
// for the handshake, longer than the lease minus its margin), so an
// acquisition and a renewal are one round trip each. The node keeps every
// shard under its first epoch while it works, and no lease is ever lost.
func TestSlowRedisLinkKeepsTheLeases(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	proxy := redistest.NewProxy(t, db.Addr)
	proxy.Latency(t, 750*time.Millisecond)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	defer rdb.Close()
	store, err := redisstore.New(rdb, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	obs := &lossCounter{}
	var handled atomic.Int32
	n, err := orderly.NewNode(store, &orderly.Config{
		Name: "slow-link", Observer: obs, Logger: slog.New(slog.NewTextHandler(&testWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Workers: []orderly.Worker{{Queue: "q", Shards: 2, Handler: func(context.Context, *orderly.Batch) error {
			handled.Add(1)
			return nil
		}}},
	})
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n.StopAndCancel(ctx)
	}()
	epochs := func() []int64 {
		st, err := n.Status(context.Background())
		if err != nil || st.Serving != 2 {
			return nil
		}
		return []int64{st.Shards[0].Epoch, st.Shards[1].Epoch}
	}
	require.Eventually(t, func() bool { return epochs() != nil }, 30*time.Second, 50*time.Millisecond, "serving both shards")
	first := epochs()
	var jobs []persistence.NewJob
	for i := range 20 {
		jobs = append(jobs, persistence.NewJob{ID: fmt.Sprint("id-", i)})
	}
	require.NoError(t, store.Enqueue(context.Background(), "q", jobs))
	deadline := time.Now().Add(4 * orderly.DefaultLeaseTTL) // 12 renewals per shard
	for time.Now().Before(deadline) {
		require.Zero(t, obs.lost.Load(), "a lease was lost on a slow link")
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, first, epochs(), "no re-acquisition: the epochs did not change")
	require.Positive(t, handled.Load())
}

// lossCounter counts lease losses.
type lossCounter struct{ lost atomic.Int32 }

func (o *lossCounter) BatchDone(persistence.ShardRef, int, int, time.Duration, error) {}
func (o *lossCounter) LeaseLost(persistence.ShardRef)                                 { o.lost.Add(1) }
