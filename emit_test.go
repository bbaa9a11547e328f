package orderly_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
)

// received records the payloads a handler got, per id.
type received struct {
	mu      sync.Mutex // guards got and headers
	got     map[string][]string
	headers map[string][]map[string]string
}

func (r *received) handler(_ context.Context, b *orderly.Batch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got, r.headers = map[string][]string{}, map[string][]map[string]string{}
	}
	for _, j := range b.Jobs {
		for _, p := range j.Payloads {
			r.got[j.ID] = append(r.got[j.ID], string(p.Data))
			r.headers[j.ID] = append(r.headers[j.ID], p.Headers)
		}
	}
	return nil
}

func (r *received) of(id string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got[id]...)
}

func (r *received) headersOf(id string) []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]string(nil), r.headers[id]...)
}

func (r *received) ids() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// A handler's emits reach their target queue after the id's ack; the emits
// of an id that failed, or that emitted something invalid, are dropped with
// it (docs/contract.md §11).
func TestEmitsCommittedWithTheAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var notify received
	e.start(orderly.Config{Workers: []orderly.Worker{
		{Queue: "orders", Shards: 1, BatchSize: 4, Handler: func(ctx context.Context, b *orderly.Batch) error {
			failed := map[string]error{}
			for _, j := range b.Jobs {
				j.Emit(orderly.Emit{Queue: "notify", ID: "n-" + j.ID, Payload: j.Payloads[0].Data})
				switch j.ID {
				case "fails":
					failed[j.ID] = errors.New("boom")
				case "bad-emit":
					j.Emit(orderly.Emit{Queue: "not a queue name!", ID: "x"})
				case "bad-headers":
					j.Emit(orderly.Emit{Queue: "notify", ID: "h", Headers: map[string]string{"": "empty key"}})
				case "ok":
					j.Emit(orderly.Emit{Queue: "notify", ID: "n-ok", Payload: []byte("traced"), Score: client.Score(1e12),
						Headers: map[string]string{"traceparent": "00-abc"}})
				}
			}
			return orderly.FailIDs(failed)
		}, MaxRetryCount: 1},
		{Queue: "notify", Shards: 2, Handler: notify.handler},
	}})
	e.enqueue("orders", client.Job{ID: "fails", Payload: []byte("f")}, client.Job{ID: "bad-emit", Payload: []byte("b")},
		client.Job{ID: "bad-headers", Payload: []byte("h")}, client.Job{ID: "ok", Payload: []byte("paid")})
	require.Eventually(t, func() bool { return len(notify.of("n-ok")) == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"paid", "traced"}, notify.of("n-ok"))
	require.Equal(t, []map[string]string{nil, {"traceparent": "00-abc"}}, notify.headersOf("n-ok"),
		"an emit's headers reach the target's handler (docs/contract.md §10)")
	// The emits of one settle are relayed together: had the failed ids'
	// emits been committed, they would have arrived with n-ok's.
	require.Equal(t, 1, notify.ids())
	for _, id := range []string{"fails", "bad-emit", "bad-headers"} {
		info, err := e.store.GetJob(e.ctx, "orders", id)
		require.NoError(t, err, id)
		require.NotNil(t, info.Queued, id)
		require.Equal(t, 0, info.Queued.RetryCount, id)
	}
	info, _ := e.store.GetJob(e.ctx, "orders", "bad-headers")
	require.Contains(t, info.Queued.Error, "headers")
	info, _ = e.store.GetJob(e.ctx, "orders", "bad-emit")
	require.Contains(t, info.Queued.Error, "emit.queue")
}

// heldRelay is a store whose outbox relay always fails: a node on it
// commits emits but never relays them, as a node that dies between the two
// would.
type heldRelay struct{ persistence.Store }

func (heldRelay) RelayOutbox(context.Context, persistence.ShardRef, int) (int, int, bool, error) {
	return 0, 0, true, errors.New("relay held")
}

// A node that dies between committing emits and relaying them leaves them
// in the shard's outbox; the next owner relays them when it takes the
// shard over, and every emit arrives.
func TestEmitsRelayedByTheNextOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "notify", Shards: 2}))
	const n = 20
	var handled sync.WaitGroup
	handled.Add(n)
	emitting := func(ctx context.Context, b *orderly.Batch) error {
		for _, j := range b.Jobs {
			j.Emit(orderly.Emit{Queue: "notify", ID: "n-" + j.ID, Payload: []byte("from " + j.ID)})
		}
		return nil
	}
	orders := orderly.Worker{Queue: "orders", Shards: 2, BatchSize: 3, Handler: func(ctx context.Context, b *orderly.Batch) error {
		defer func() {
			for range b.Jobs {
				handled.Done()
			}
		}()
		return emitting(ctx, b)
	}}
	a, err := orderly.NewNode(heldRelay{e.store}, &orderly.Config{Name: "node-a", Logger: testLogger(t), Workers: []orderly.Worker{orders}})
	require.NoError(t, err)
	require.NoError(t, a.Start(e.ctx))
	for i := range n {
		e.enqueue("orders", client.Job{ID: string(rune('a' + i))})
	}
	handled.Wait()
	require.Eventually(t, func() bool { return e.stats("orders").Processed == n }, 10*time.Second, 10*time.Millisecond)
	stop, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, a.Stop(stop))
	st, err := e.store.Stats(e.ctx, "notify")
	require.NoError(t, err)
	require.Zero(t, st[0].Length, "node A relayed nothing")

	var notify received
	orders.Handler = emitting
	e.start(orderly.Config{Name: "node-b", Workers: []orderly.Worker{orders, {Queue: "notify", Shards: 2, Handler: notify.handler}}})
	require.Eventually(t, func() bool { return notify.ids() == n }, 10*time.Second, 10*time.Millisecond)
	for i := range n {
		id := string(rune('a' + i))
		require.Equal(t, []string{"from " + id}, notify.of("n-"+id))
	}
}
