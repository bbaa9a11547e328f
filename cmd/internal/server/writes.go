package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// refusalMemory is how long a write that Redis refused keeps the node not
// ready: about one period of a readiness probe, so that a refusal is seen
// even when the next small write would pass.
const refusalMemory = 10 * time.Second

// writeCheckTimeout bounds one write probe.
const writeCheckTimeout = 2 * time.Second

// refusals are the error prefixes of a Redis that refuses writes while it
// answers: out of memory with noeviction, a read-only replica, a failed
// snapshot with stop-writes-on-bgsave-error, too few replicas for
// min-replicas-to-write.
var refusals = []string{"OOM ", "READONLY ", "MISCONF ", "NOREPLICAS "}

// refused reports whether err is a refused write.
func refused(err error) bool {
	for _, p := range refusals {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// writeWatch tells whether Redis accepts the node's writes, from two
// sources: a write probe, and the refusals the node's own writes met in the
// last refusalMemory. The probe alone would miss a Redis at the edge of its
// memory, which refuses a large write and accepts a small one; the
// refusals alone would miss a Redis nobody writes to. A ping does not tell:
// Redis answers it while it refuses every write.
type writeWatch struct {
	rdb redis.UniversalClient
	// probeKey is the key the probe names: SETRANGE of an empty string at
	// offset 0 is a write (refused like any other) that creates nothing.
	probeKey string

	mu        sync.Mutex // guards refusal and refusedAt
	refusal   error      // the last refused write of the node
	refusedAt time.Time
}

func newWriteWatch(rdb redis.UniversalClient, prefix string) *writeWatch {
	return &writeWatch{rdb: rdb, probeKey: prefix + ":write-probe"}
}

// Check returns nil while Redis accepts writes, otherwise why not. Errors
// other than a refusal (Redis unreachable) are the readiness check's of the
// node.
func (w *writeWatch) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, writeCheckTimeout)
	defer cancel()
	if err := w.rdb.SetRange(ctx, w.probeKey, 0, "").Err(); refused(err) {
		w.note(err)
		return fmt.Errorf("the store refuses writes: %v", err)
	}
	w.mu.Lock()
	err, at := w.refusal, w.refusedAt
	w.mu.Unlock()
	if since := time.Since(at); err != nil && since < refusalMemory {
		return fmt.Errorf("the store refused a write %s ago: %v", since.Round(time.Millisecond), err)
	}
	return nil
}

// note records err if it is a refused write.
func (w *writeWatch) note(err error) {
	if err == nil || !refused(err) {
		return
	}
	w.mu.Lock()
	w.refusal, w.refusedAt = err, time.Now()
	w.mu.Unlock()
}

// Gauge is the metric orderly_store_writable, read at scrape time.
func (w *writeWatch) Gauge() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "orderly", Name: "store_writable",
		Help: "1 when Redis accepts writes: a write probe passed and no write of this node was refused in the last 10 s; 0 otherwise (out of memory, read-only replica, failed snapshot).",
	}, func() float64 {
		if w.Check(context.Background()) != nil {
			return 0
		}
		return 1
	})
}

// Store returns s reporting the refusals of its writes to w. When s can
// reshard (persistence.Resharder), so can the store returned: the node
// drives the drain of a resharded queue through it.
func (w *writeWatch) Store(s persistence.Store) persistence.Store {
	ws := &watchedStore{Store: s, w: w}
	if rs, ok := s.(persistence.Resharder); ok {
		return &watchedResharder{watchedStore: ws, Resharder: rs}
	}
	return ws
}

// watchedResharder is a watchedStore on a store that reshards; the steps
// of a drain note their refusals too.
type watchedResharder struct {
	*watchedStore
	persistence.Resharder
}

// DrainShard notes the refusal of a drain step, one of the node's writes.
func (s *watchedResharder) DrainShard(ctx context.Context, l persistence.Lease, limit int) (persistence.DrainResult, error) {
	res, err := s.Resharder.DrainShard(ctx, l, limit)
	s.w.note(err)
	return res, err
}

// watchedStore notes the refused writes of the node: enqueues, settlements
// and leases.
type watchedStore struct {
	persistence.Store
	w *writeWatch
}

func (s *watchedStore) Enqueue(ctx context.Context, queue string, jobs []persistence.NewJob) error {
	err := s.Store.Enqueue(ctx, queue, jobs)
	s.w.note(err)
	return err
}

// EnqueueReport implements persistence.EnqueueReporter, so that the
// duplicates of an enqueue pass through.
func (s *watchedStore) EnqueueReport(ctx context.Context, queue string, jobs []persistence.NewJob) (persistence.EnqueueResult, error) {
	res, err := persistence.EnqueueReport(ctx, s.Store, queue, jobs)
	s.w.note(err)
	return res, err
}

func (s *watchedStore) Advance(ctx context.Context, l persistence.Lease, r persistence.AdvanceRequest) (persistence.AdvanceResult, error) {
	res, err := s.Store.Advance(ctx, l, r)
	s.w.note(err)
	return res, err
}

func (s *watchedStore) AcquireShard(ctx context.Context, ref persistence.ShardRef, owner string, ttl time.Duration) (persistence.Lease, int, error) {
	l, n, err := s.Store.AcquireShard(ctx, ref, owner, ttl)
	s.w.note(err)
	return l, n, err
}

func (s *watchedStore) RenewShard(ctx context.Context, l persistence.Lease, ttl time.Duration) error {
	err := s.Store.RenewShard(ctx, l, ttl)
	s.w.note(err)
	return err
}

// RenewShards notes the refusals of a node's batched lease renewals.
func (s *watchedStore) RenewShards(ctx context.Context, leases []persistence.Lease, ttl time.Duration) []error {
	errs := s.Store.RenewShards(ctx, leases, ttl)
	for _, err := range errs {
		s.w.note(err)
	}
	return errs
}
