package shard

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// Renewer renews the leases of a node's shard actors together: every
// LeaseTTL/3 from the send time of its previous call, it renews every lease
// registered with it in one Store.RenewShards call (one round trip, or one
// per server of a clustered store), so that an idle node's renewals cost the
// same whatever its number of shards. Each lease is still fenced on its own,
// and each actor gets its own result as a message, exactly as if it had
// renewed alone: the send time of the batch dates its lease view, and a
// refused renewal cancels its handler at once. At most one call is in
// flight; a renewal falling due meanwhile goes out when the reply comes.
//
// The node that owns the Renewer starts it with Start and stops it with Stop;
// shard actors register and deregister their leases from their own
// goroutines. Its methods are safe for concurrent use.
type Renewer struct {
	store persistence.ShardStore
	ttl   time.Duration
	log   *slog.Logger

	cadence // the loop

	mu     sync.Mutex                       // guards leases; held while arming the cadence (LOCKS.md)
	leases map[persistence.ShardRef]renewal // the leases to renew, by shard
}

// renewal is one registered lease and where its results go.
type renewal struct {
	lease   persistence.Lease
	deliver func(renewed)
}

// NewRenewer returns a Renewer of leases of ttl on store, timed by clk
// [clock.Real()].
func NewRenewer(store persistence.ShardStore, ttl time.Duration, clk clock.Clock, log *slog.Logger) *Renewer {
	if log == nil {
		log = slog.Default()
	}
	return &Renewer{store: store, ttl: ttl, log: log, cadence: newCadence(clk), leases: map[persistence.ShardRef]renewal{}}
}

// Start starts the renewal loop; it returns at once. A second call, or a
// call after Stop, does nothing.
func (r *Renewer) Start() {
	r.start(r.clock.Now().Add(r.ttl/3), r.round)
}

// Stop stops the loop, cancelling a renewal in flight (its results are not
// delivered), and waits for it to return, or for ctx to end (its error is
// returned then). Leases registered are renewed no more: a stopping node's
// actors release theirs. Stop is idempotent.
func (r *Renewer) Stop(ctx context.Context) error {
	return r.halt(ctx)
}

// add registers a lease (replacing the shard's previous one) acquired or
// last renewed by a call sent at sent; deliver receives the result of each
// renewal of it. The next renewal goes out LeaseTTL/3 after sent at the
// latest: the lease joins the common cadence from then on.
func (r *Renewer) add(l persistence.Lease, sent time.Time, deliver func(renewed)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leases[l.ShardRef] = renewal{lease: l, deliver: deliver}
	r.armEarlier(sent.Add(r.ttl / 3))
}

// remove deregisters the lease of token, if it is still the shard's. A
// renewal already in flight still delivers its result.
func (r *Renewer) remove(ref persistence.ShardRef, token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if x, ok := r.leases[ref]; ok && x.lease.Token == token {
		delete(r.leases, ref)
	}
}

// round renews every registered lease in one call and delivers each
// result.
func (r *Renewer) round(base context.Context) {
	r.mu.Lock()
	batch := make([]renewal, 0, len(r.leases))
	leases := make([]persistence.Lease, 0, len(r.leases))
	for _, x := range r.leases {
		batch = append(batch, x)
		leases = append(leases, x.lease)
	}
	// The next renewal is due LeaseTTL/3 after this one's send time,
	// however long its reply takes. It is armed before a lease added
	// after this snapshot can arm an earlier one (r.mu, then the
	// cadence's).
	started := r.clock.Now()
	r.arm(started.Add(r.ttl / 3))
	r.mu.Unlock()
	if len(leases) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(base, r.ttl/2)
	errs := r.store.RenewShards(ctx, leases, r.ttl)
	cancel()
	if base.Err() != nil {
		return // stopped: nobody waits for these results
	}
	for i, x := range batch {
		x.deliver(renewed{lease: x.lease, started: started, err: errs[i]})
	}
}
