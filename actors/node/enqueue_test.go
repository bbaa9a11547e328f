package node

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/orderlyhq/orderly/internal/logbridge"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
)

// blockingStore holds every Enqueue until release is closed.
type blockingStore struct {
	persistence.Store
	release chan struct{}
	calls   atomic.Int32
}

func (b *blockingStore) Enqueue(ctx context.Context, queue string, jobs []persistence.NewJob) error {
	b.calls.Add(1)
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A flood of Enqueue messages while the store is slow: the actor serves a
// bounded number, queues a bounded number, and answers the rest "busy" at
// once instead of growing without bound.
func TestEnqueueActorIsBounded(t *testing.T) {
	store := &blockingStore{release: make(chan struct{})}
	log := slog.New(slog.DiscardHandler)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(logbridge.Protoactor(log)), actor.WithDeadLetterThrottleInterval(100*time.Millisecond))
	defer sys.Shutdown()
	pid, err := sys.Root.SpawnNamed(EnqueueProps(EnqueueConfig{Store: store, Logger: log}), "enqueue")
	require.NoError(t, err)

	n := MaxEnqueueInFlight + MaxEnqueueWaiting + 500
	futures := make([]*actor.Future, n)
	for i := range futures {
		futures[i] = sys.Root.RequestFuture(pid, &messages.Enqueue{Queue: "q", Jobs: []*messages.Job{{Id: "a"}}}, 30*time.Second)
	}
	busy := 0
	for _, f := range futures[n-500:] {
		res, err := f.Result()
		require.NoError(t, err)
		require.Equal(t, messages.Code_CODE_UNAVAILABLE, res.(*messages.EnqueueResult).GetError().GetCode())
		busy++
	}
	require.Equal(t, 500, busy)
	require.EqualValues(t, MaxEnqueueInFlight, store.calls.Load(), "only MaxEnqueueInFlight reach the store at once")
	close(store.release)
	for _, f := range futures[:n-500] {
		res, err := f.Result()
		require.NoError(t, err)
		require.Equal(t, int64(1), res.(*messages.EnqueueResult).GetEnqueued())
	}
	require.NoError(t, sys.Root.StopFuture(pid).Wait())
}

// FuzzEnqueueMessage decodes arbitrary bytes as an Enqueue message (what a
// remote peer may send) and converts it: never a panic, and every error
// names a field.
func FuzzEnqueueMessage(f *testing.F) {
	score, at, in := 1.5, 1700000000.0, 2.0
	for _, m := range []*messages.Enqueue{
		{Queue: "q", Jobs: []*messages.Job{{Id: "a", Payload: []byte("x"), Score: &score}}},
		{Queue: "q", Jobs: []*messages.Job{{Id: "a", PerformAt: &at, PerformIn: &in}}},
		{Queue: "", Jobs: nil},
	} {
		b, err := proto.Marshal(m)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{0xff, 0x01, 0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m messages.Enqueue
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		jobs, err := JobsFromMessage(&m, time.Unix(1700000000, 0))
		if err != nil {
			var fe *persistence.FieldError
			require.ErrorAs(t, err, &fe)
			require.NotEmpty(t, fe.Path())
			return
		}
		require.Len(t, jobs, len(m.GetJobs()))
		if err := persistence.ValidateJobs(jobs, 0); err != nil {
			require.ErrorIs(t, err, persistence.ErrInvalid)
		}
	})
}

// TestJobsFromMessagePriority: a message's priority reaches the store's
// job, and one outside 1 to 4 is a field error naming it
// (docs/contract.md §3.16).
func TestJobsFromMessagePriority(t *testing.T) {
	jobs, err := JobsFromMessage(&messages.Enqueue{Queue: "q", Jobs: []*messages.Job{{Id: "a", Priority: 3}, {Id: "b"}}}, time.Unix(1700000000, 0))
	require.NoError(t, err)
	require.Equal(t, 3, jobs[0].Priority)
	require.Equal(t, 0, jobs[1].Priority)
	require.NoError(t, persistence.ValidateJobs(jobs, 0))
	jobs, err = JobsFromMessage(&messages.Enqueue{Queue: "q", Jobs: []*messages.Job{{Id: "a", Priority: 5}}}, time.Unix(1700000000, 0))
	require.NoError(t, err)
	err = persistence.ValidateJobs(jobs, 0)
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "jobs[0].priority", fe.Path())
}
