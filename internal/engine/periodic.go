package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// Periodic jobs (docs/contract.md §9): each node computes the ticks of the
// periodic jobs it was given and enqueues each with Store.EnqueueTick,
// which writes a tick only if it is later than the last one written for
// that job on the job's shard, in the same atomic step: each tick is
// enqueued once cluster-wide, whichever nodes try it and whenever they
// die. Ticks missed while no node ran are not replayed, except the latest
// one.

// maxTickSteps bounds the walk over missed ticks to find the latest one.
const maxTickSteps = 1_000_000

// periodicPoll is the longest a node waits between two looks at its
// periodic jobs, so that a tick another node missed is caught.
const periodicPoll = time.Second

// periodicEnqueuer is the service that enqueues the ticks of the node's
// periodic jobs.
type periodicEnqueuer struct {
	store persistence.ControlStore
	jobs  []Periodic
	clock clock.Clock
	log   *slog.Logger
	loop  loop
}

func newPeriodicEnqueuer(store persistence.ControlStore, jobs []Periodic, clk clock.Clock, log *slog.Logger) *periodicEnqueuer {
	return &periodicEnqueuer{store: store, jobs: jobs, clock: clk, log: log}
}

// Start starts the loop when there are periodic jobs; it returns at once.
func (p *periodicEnqueuer) Start() {
	if len(p.jobs) > 0 {
		p.loop.start(p.run)
	}
}

// Stop stops the loop and waits for it (or for ctx).
func (p *periodicEnqueuer) Stop(ctx context.Context) error { return p.loop.stop(ctx) }

func (p *periodicEnqueuer) names() []string {
	names := make([]string, len(p.jobs))
	for i, j := range p.jobs {
		names[i] = j.Name
	}
	return names
}

// run enqueues the ticks until ctx ends. A job that never ticked starts
// from the node's start: its first tick is the first one after it.
func (p *periodicEnqueuer) run(ctx context.Context) {
	base := make([]time.Time, len(p.jobs))
	start := p.clock.Now()
	names := p.names()
	for {
		now := p.clock.Now()
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last, err := p.store.LastTicks(lctx, names...)
		cancel()
		if err != nil && ctx.Err() == nil {
			p.log.Warn("cannot read the periodic ticks; retrying", "err", err)
		}
		wake := now.Add(periodicPoll)
		for i, j := range p.jobs {
			if err == nil {
				base[i] = last[i]
			}
			if base[i].IsZero() {
				base[i] = start
			}
			if t := latestTick(j.Schedule, base[i], now); !t.IsZero() {
				if p.tick(ctx, j, t) {
					base[i] = t
				}
			}
			if next := j.Schedule.Next(later(base[i], now)); !next.IsZero() && next.Before(wake) {
				wake = next
			}
		}
		if clock.Sleep(ctx, p.clock, max(clock.Until(p.clock, wake), time.Millisecond)) != nil {
			return
		}
	}
}

// latestTick returns the latest tick of sched after base and at or before
// now, or the zero time when none.
func latestTick(sched interface{ Next(time.Time) time.Time }, base, now time.Time) time.Time {
	var latest time.Time
	t := sched.Next(base)
	for i := 0; i < maxTickSteps && !t.IsZero() && !t.After(now); i++ {
		latest = t
		t = sched.Next(t)
	}
	return latest
}

// tick enqueues the job's tick t unless it was enqueued already (by any
// node, or by this one before a lost reply): Store.EnqueueTick checks and
// enqueues in one atomic step on the job's shard, so a tick is enqueued
// exactly once. Then it moves the shown last tick forward. It reports
// whether the tick is settled; a failed call is retried at the next poll.
func (p *periodicEnqueuer) tick(ctx context.Context, j Periodic, t time.Time) bool {
	score := persistence.UnixSeconds(t)
	job := persistence.NewJob{ID: j.ID, Payload: j.Payload, Score: &score}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	won, err := p.store.EnqueueTick(actx, j.Queue, j.Name, t, job)
	if err != nil {
		if errors.Is(err, persistence.ErrInvalid) {
			p.log.Error("periodic job cannot be enqueued", "periodic", j.Name, "tick", t, "err", err)
			return true
		}
		if ctx.Err() == nil {
			p.log.Warn("cannot enqueue a periodic tick; retrying", "periodic", j.Name, "tick", t, "err", err)
		}
		return false
	}
	if won {
		p.log.Debug("periodic job enqueued", "periodic", j.Name, "tick", t)
	}
	if _, err := p.store.AdvanceTick(actx, j.Name, t); err != nil && ctx.Err() == nil {
		// The tick is enqueued; only the shown last tick lags, and the
		// next poll moves it.
		p.log.Warn("cannot record a periodic tick", "periodic", j.Name, "tick", t, "err", err)
	}
	return true
}

// PeriodicStatus is one periodic job's last and next tick.
type PeriodicStatus struct {
	// Last is the last tick enqueued (by any node), zero if none; Next the
	// next one due.
	Last, Next time.Time
}

// Periodic returns the last and next tick of each periodic job, in the
// order of Config.Periodic.
func (e *Engine) Periodic(ctx context.Context) ([]PeriodicStatus, error) {
	p := e.periodic
	if len(p.jobs) == 0 {
		return nil, nil
	}
	last, err := p.store.LastTicks(ctx, p.names()...)
	if err != nil {
		return nil, fmt.Errorf("orderly: periodic jobs: %w", err)
	}
	now := p.clock.Now()
	out := make([]PeriodicStatus, len(p.jobs))
	for i, j := range p.jobs {
		out[i] = PeriodicStatus{Last: last[i], Next: j.Schedule.Next(later(last[i], now))}
	}
	return out, nil
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
