package shard

import (
	"context"
	"errors"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/persistence"
)

// Online resharding (docs/contract.md §3.17): when a reshard drains the
// actor's shard, its Advance fetches nothing and says so
// (AdvanceResult.Draining). The actor then moves the shard's ids to the
// queue's new shards, one bounded DrainShard step at a time, relaying its
// outbox when the store asks for it, until the shard is drained
// (AdvanceResult.Moved, DrainResult.Done); a drained shard has nothing
// more to do, and its node stops serving it once the reshard ends.

// drainStepIDs bounds the ids one drain step moves: each step is one
// script of a few milliseconds on the old shard's server.
const drainStepIDs = 200

// reshardMode is what a reshard asks of the actor's shard.
type reshardMode uint8

const (
	reshardNone  reshardMode = iota
	reshardDrain             // drain the shard (DrainShard steps)
	reshardMoved             // drained: nothing more to fetch
)

// drainStepped is the result of one DrainShard step.
type drainStepped struct {
	res persistence.DrainResult
	err error
}

// noteReshard takes what an Advance said of a reshard.
func (a *Actor) noteReshard(res persistence.AdvanceResult) {
	switch {
	case res.Moved:
		a.reshard = reshardMoved
	case res.Draining:
		if a.reshard != reshardDrain {
			a.log.Info("a reshard drains the shard: moving its ids to the queue's new shards")
		}
		a.reshard = reshardDrain
	default:
		a.reshard = reshardNone
	}
}

// startDrainStep runs one DrainShard step.
func (a *Actor) startDrainStep(c actor.Context) {
	rs, ok := a.cfg.Store.(persistence.Resharder)
	if !ok {
		a.log.Error("a reshard drains the shard, but the store cannot move its ids")
		a.reshard = reshardMoved
		return
	}
	a.phase = phaseResharding
	a.stopPolling()
	lease := *a.lease
	timeout := a.storeTimeout()
	a.task(c, func(base context.Context) any {
		ctx, cancel := context.WithTimeout(base, timeout)
		defer cancel()
		res, err := rs.DrainShard(ctx, lease, drainStepIDs)
		return drainStepped{res: res, err: err}
	})
}

func (a *Actor) onDrainStepped(c actor.Context, m drainStepped) {
	a.phase = phaseIdle
	if a.lease == nil {
		return // lost meanwhile: the next owner goes on from the store's journal
	}
	if m.err != nil {
		if errors.Is(m.err, persistence.ErrLeaseLost) {
			a.leaseLost(c, "the store refused the lease")
			return
		}
		a.storeFailed(c, "drain for a reshard", m.err)
		return
	}
	a.storeOK(c)
	if m.res.Outbox > 0 {
		a.relayDue = true
	}
	if m.res.Done {
		a.reshard = reshardMoved
		a.log.Info("shard drained into the queue's new shards")
	}
}
