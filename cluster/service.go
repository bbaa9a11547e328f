package cluster

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// placementTick recomputes the placement even without membership events,
// in case one was missed.
const placementTick = time.Second

// ServiceConfig configures a Service. Every field but Clock and Logger is
// required.
type ServiceConfig struct {
	// Members is this node's membership.
	Members *Membership
	// Self is this node's name in the membership.
	Self string
	// Queues maps the node's queues to their shard counts.
	Queues map[string]int
	// Shards, when set, gives the shard numbers of each of the node's
	// queues, read at every placement: a reshard (docs/contract.md §3.17)
	// changes them while the node runs. Nil: 0 to Queues[q]-1; a queue it
	// leaves out has those too.
	Shards func() map[string][]int
	// Assign receives the shards this node should serve: its share of the
	// placement and the shards it adopted (orphans.go), whenever either
	// changes and after Refresh. It is called from the placement loop, one
	// call at a time, and must not block.
	Assign func(share, adopted []persistence.ShardRef)
	// Ping checks that the store is reachable; the health loop calls it
	// every LeaseTTL/3 with a context bounded by LeaseTTL/3.
	Ping func(ctx context.Context) error
	// Owners reads who holds the lease of each shard of a queue
	// (persistence.QueueStore.ShardOwners), for the orphan sweep; nil sweeps
	// nothing: no shard is ever adopted.
	Owners func(ctx context.Context, queue string) ([]persistence.ShardOwner, error)
	// StoreID, if set, reads the identity of the node's store: when the
	// membership does not advertise one yet (the store did not answer at
	// Start), the placement loop reads it (retrying with backoff) and
	// advertises it before it places any shard.
	StoreID  func(ctx context.Context) (string, error)
	LeaseTTL time.Duration
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Service runs this node's part of the cluster protocol over a Membership
// (see the package documentation), in three loops:
//
//   - placement: advertises the store's identity if the membership has
//     none yet, then computes the node's share of the shards from the
//     members it sees and hands it to Assign when it changes (on every
//     membership or metadata change, and every second in case one was
//     missed), with the shards it adopted (orphans.go);
//   - sweep: reads the lease holders of the node's queues a few times a
//     second and hands them to the placement loop, which adopts the
//     shards no node serves;
//   - health: advertises the node unhealthy (Meta.Unhealthy) once it could
//     not reach the store for half a lease, so that the others take its
//     shards over as its leases expire; and healthy again once it has
//     reached the store for a whole lease.
type Service struct {
	cfg     ServiceConfig
	log     *slog.Logger
	refresh chan struct{} // Refresh's coalesced signal to the placement loop

	swept chan map[persistence.ShardRef]string // the sweep's last read of the lease holders (buffered 1)

	mu        sync.Mutex                         // guards cancel and freeSince
	cancel    context.CancelFunc                 // ends the loops; nil until Start
	freeSince map[persistence.ShardRef]time.Time // the free shards at the last sweep, and since when
	wg        sync.WaitGroup                     // the loops
}

// NewService returns a service that runs once started.
func NewService(cfg ServiceConfig) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("component", "cluster"), refresh: make(chan struct{}, 1),
		swept: make(chan map[persistence.ShardRef]string, 1)}
}

// Start starts the loops and returns; they run until Stop. Starting a
// started service does nothing.
func (s *Service) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return nil
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(2)
	go s.placementLoop(lctx)
	go s.healthLoop(lctx)
	if s.cfg.Owners != nil {
		s.wg.Add(1)
		go s.sweepLoop(lctx)
	}
	return nil
}

// Stop ends the loops and waits for them, or returns ctx's error when ctx
// ends first (the loops then end on their own shortly: each step is
// bounded). Stopping a stopped or never started service does nothing.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.Join(errors.New("cluster: loops still running"), ctx.Err())
	}
}

// Refresh makes the placement loop hand its current placement to Assign
// again, even if it did not change (after the node resumed serving).
func (s *Service) Refresh() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

func (s *Service) placementLoop(ctx context.Context) {
	defer s.wg.Done()
	if !s.identify(ctx) {
		return
	}
	var last []persistence.ShardRef
	var o orphans
	send := true
	for {
		members := s.cfg.Members.Members()
		refs := assignment(s.cfg.Self, s.shardNumbers(), members)
		if !slices.Equal(refs, last) && len(o.adopted) > 0 {
			s.log.Info("placement changed: giving back the adopted shards", "adopted", len(o.adopted))
			o.adopted = nil
			send = true
		}
		if send || !slices.Equal(refs, last) {
			alive := 0
			for _, m := range members {
				if m.State == StateAlive {
					alive++
				}
			}
			s.log.Info("placement", "shards", len(refs), "adopted", len(o.adopted), "members_alive", alive, "members", len(members))
			last, send = refs, false
			s.cfg.Assign(refs, o.adoptedList())
		}
		tick, stop := clock.After(s.cfg.Clock, placementTick)
		select {
		case <-ctx.Done():
			stop()
			return
		case <-s.cfg.Members.changes:
		case <-s.refresh:
			send = true
		case owners := <-s.swept:
			send = s.sweep(&o, owners, last)
		case <-tick:
		}
		stop()
	}
}

// shardNumbers returns the shard numbers of each of the node's queues.
func (s *Service) shardNumbers() map[string][]int {
	var given map[string][]int
	if s.cfg.Shards != nil {
		given = s.cfg.Shards()
	}
	out := make(map[string][]int, len(s.cfg.Queues))
	for q, n := range s.cfg.Queues {
		if nums, ok := given[q]; ok {
			out[q] = nums
		} else {
			out[q] = numbers(n)
		}
	}
	return out
}

// identify advertises the store's identity when the membership has none
// yet (the store did not answer at Start), retrying with backoff until it
// is read or ctx ends (false then).
func (s *Service) identify(ctx context.Context) bool {
	if s.cfg.StoreID == nil {
		return true
	}
	for _, m := range s.cfg.Members.Members() {
		if m.Name == s.cfg.Self && m.Meta.Store != "" {
			return true
		}
	}
	backoff := 100 * time.Millisecond
	for {
		id, err := s.cfg.StoreID(ctx)
		if err == nil {
			if err := s.cfg.Members.SetMeta(ctx, func(m *Meta) { m.Store = id }); err != nil {
				s.log.Warn("cannot advertise the store's identity", "err", err)
			}
			return true
		}
		s.log.Warn("cannot read the store's identity yet; retrying", "err", err)
		if clock.Sleep(ctx, s.cfg.Clock, backoff) != nil {
			return false
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (s *Service) healthLoop(ctx context.Context) {
	defer s.wg.Done()
	ttl := s.cfg.LeaseTTL
	var failingSince, okSince time.Time
	unhealthy := false
	for {
		if clock.Sleep(ctx, s.cfg.Clock, ttl/3) != nil {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, ttl/3)
		err := s.cfg.Ping(pctx)
		cancel()
		now := s.cfg.Clock.Now()
		if err != nil {
			okSince = time.Time{}
			if failingSince.IsZero() {
				failingSince = now
			}
			if !unhealthy && now.Sub(failingSince) >= ttl/2 {
				unhealthy = true
				s.log.Warn("cannot reach the store: advertising unhealthy so that other nodes take the shards over", "err", err)
				s.setUnhealthy(ctx, true)
			}
			continue
		}
		failingSince = time.Time{}
		if okSince.IsZero() {
			okSince = now
		}
		if unhealthy && now.Sub(okSince) >= ttl {
			unhealthy = false
			s.log.Info("store reachable again: serving shards again")
			s.setUnhealthy(ctx, false)
		}
	}
}

func (s *Service) setUnhealthy(ctx context.Context, v bool) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.LeaseTTL/3)
	defer cancel()
	if err := s.cfg.Members.SetMeta(ctx, func(m *Meta) { m.Unhealthy = v }); err != nil {
		s.log.Warn("cannot advertise health", "err", err)
	}
}
