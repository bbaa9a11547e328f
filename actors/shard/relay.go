package shard

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// The outbox relay (docs/contract.md §11, docs/storage.md section 10):
// emits committed with their ids' acks wait in the shard's outbox until the
// owner enqueues them into their targets. The owner relays after every
// Advance that reports entries, before its next store call (the first
// Advance under a new lease always looks: a previous owner may have died
// before relaying); a failed relay backs
// off (timerRelay) without holding processing up, and is tried again. A
// draining owner relays before it releases the lease, unless its relay is
// backing off: the next owner relays then.

// relayChunks bounds one relay run (relayChunk entries each); a run that
// leaves entries behind is followed by another.
const (
	relayChunk  = 500
	relayChunks = 20
)

func (a *Actor) startRelay(c actor.Context) {
	a.phase = phaseRelaying
	cfg := a.cfg
	timeout := a.storeTimeout()
	a.task(c, func(ctx context.Context) any {
		var out relayed
		for range relayChunks {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			n, d, more, err := cfg.Store.RelayOutbox(ctx, cfg.Ref, relayChunk)
			cancel()
			out.n, out.dropped, out.more, out.err = out.n+n, out.dropped+d, more, err
			if err != nil || !more {
				break
			}
		}
		return out
	})
}

func (a *Actor) onRelayed(c actor.Context, m relayed) {
	a.phase = phaseIdle
	if m.dropped > 0 {
		a.log.Error("emits dropped by the relay: their target queue does not exist or refuses them", "jobs", m.dropped)
	}
	if m.err != nil {
		a.relayFails++
		if a.relayFails == 1 || a.relayFails%20 == 0 {
			a.log.Warn("relaying emits failed; retrying with backoff", "err", m.err, "attempt", a.relayFails)
		}
		a.arm(c, timerRelay, jitter(min(50*time.Millisecond<<min(a.relayFails, 7), 5*time.Second)))
		return
	}
	a.relayFails = 0
	a.relayDue = m.more && a.lease != nil
	if m.n > 0 {
		a.log.Debug("emits relayed", "jobs", m.n)
	}
}
