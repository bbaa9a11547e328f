package orderly

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

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

// PeriodicJob enqueues a job on a schedule.
type PeriodicJob struct {
	// Name identifies the job's ticks in the store; unique per store.
	Name string
	// Queue receives the job: one of the node's workers.
	Queue string
	// Schedule is a standard 5-field cron expression ("0 3 * * *", in the
	// node's local time zone unless it starts with CRON_TZ=...) or a
	// descriptor such as "@hourly" or "@every 10s", as parsed by
	// github.com/robfig/cron/v3.
	Schedule string
	// ID is the enqueued job's id; the job merges like any other (same id:
	// one job).
	ID string
	// Payload is the enqueued payload [empty]. Its score is the tick's
	// time.
	Payload []byte
}

// maxTickSteps bounds the walk over missed ticks to find the latest one.
const maxTickSteps = 1_000_000

// periodicPoll is the longest a node waits between two looks at its
// periodic jobs, so that a tick another node missed is caught.
const periodicPoll = time.Second

// periodic is a validated PeriodicJob with its parsed schedule.
type periodic struct {
	job   PeriodicJob
	sched cron.Schedule
}

// ParseSchedule parses a periodic job's schedule (see PeriodicJob.Schedule).
func ParseSchedule(s string) (cron.Schedule, error) {
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", s, err)
	}
	return sched, nil
}

// validatePeriodic checks the node's periodic jobs against its workers.
func validatePeriodic(jobs []PeriodicJob, workers []Worker) ([]periodic, error) {
	queues := map[string]bool{}
	for _, w := range workers {
		queues[w.Queue] = true
	}
	seen := map[string]bool{}
	out := make([]periodic, 0, len(jobs))
	for i, j := range jobs {
		switch {
		case j.Name == "":
			return nil, fmt.Errorf("orderly: periodic job %d has no name", i)
		case seen[j.Name]:
			return nil, fmt.Errorf("orderly: two periodic jobs are named %s", j.Name)
		case !queues[j.Queue]:
			return nil, fmt.Errorf("orderly: periodic job %s: queue %q is not one of the node's workers", j.Name, j.Queue)
		}
		if err := persistence.ValidateID(j.ID, -1); err != nil {
			return nil, fmt.Errorf("orderly: periodic job %s: id: %w", j.Name, err)
		}
		seen[j.Name] = true
		sched, err := ParseSchedule(j.Schedule)
		if err != nil {
			return nil, fmt.Errorf("orderly: periodic job %s: %w", j.Name, err)
		}
		out = append(out, periodic{job: j, sched: sched})
	}
	return out, nil
}

// latestTick returns the latest tick of sched after base and at or before
// now, or the zero time when none.
func latestTick(sched cron.Schedule, base, now time.Time) time.Time {
	var latest time.Time
	t := sched.Next(base)
	for i := 0; i < maxTickSteps && !t.IsZero() && !t.After(now); i++ {
		latest = t
		t = sched.Next(t)
	}
	return latest
}

// runPeriodic enqueues the ticks of the node's periodic jobs until ctx
// ends. A job that never ticked starts from the node's start: its first
// tick is the first one after it.
func (n *Node) runPeriodic(ctx context.Context) {
	defer n.boot.Done()
	base := make([]time.Time, len(n.periodic))
	start := n.clock.Now()
	for {
		now := n.clock.Now()
		names := make([]string, len(n.periodic))
		for i, p := range n.periodic {
			names[i] = p.job.Name
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last, err := n.store.LastTicks(lctx, names...)
		cancel()
		if err != nil && ctx.Err() == nil {
			n.log.Warn("cannot read the periodic ticks; retrying", "err", err)
		}
		wake := now.Add(periodicPoll)
		for i, p := range n.periodic {
			if err == nil {
				base[i] = last[i]
			}
			if base[i].IsZero() {
				base[i] = start
			}
			if t := latestTick(p.sched, base[i], now); !t.IsZero() {
				if n.tick(ctx, p.job, t) {
					base[i] = t
				}
			}
			if next := p.sched.Next(maxTime(base[i], now)); !next.IsZero() && next.Before(wake) {
				wake = next
			}
		}
		if clock.Sleep(ctx, n.clock, max(clock.Until(n.clock, wake), time.Millisecond)) != nil {
			return
		}
	}
}

// tick enqueues the job's tick t unless it was enqueued already (by any
// node, or by this one before a lost reply): Store.EnqueueTick checks and
// enqueues in one atomic step on the job's shard, so a tick is enqueued
// exactly once. Then it moves the shown last tick forward. It reports
// whether the tick is settled; a failed call is retried at the next poll.
func (n *Node) tick(ctx context.Context, j PeriodicJob, t time.Time) bool {
	score := persistence.UnixSeconds(t)
	job := persistence.NewJob{ID: j.ID, Payload: j.Payload, Score: &score}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	won, err := n.store.EnqueueTick(actx, j.Queue, j.Name, t, job)
	if err != nil {
		if errors.Is(err, persistence.ErrInvalid) {
			n.log.Error("periodic job cannot be enqueued", "periodic", j.Name, "tick", t, "err", err)
			return true
		}
		if ctx.Err() == nil {
			n.log.Warn("cannot enqueue a periodic tick; retrying", "periodic", j.Name, "tick", t, "err", err)
		}
		return false
	}
	if won {
		n.log.Debug("periodic job enqueued", "periodic", j.Name, "tick", t)
	}
	if _, err := n.store.AdvanceTick(actx, j.Name, t); err != nil && ctx.Err() == nil {
		// The tick is enqueued; only the shown last tick lags, and the
		// next poll moves it.
		n.log.Warn("cannot record a periodic tick", "periodic", j.Name, "tick", t, "err", err)
	}
	return true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// PeriodicStatus is one periodic job as the node sees it.
type PeriodicStatus struct {
	Name, Queue, Schedule, ID string
	// Last is the last tick enqueued (by any node), zero if none; Next the
	// next one due.
	Last, Next time.Time
}

// Periodic returns the node's periodic jobs with their last and next tick.
func (n *Node) Periodic(ctx context.Context) ([]PeriodicStatus, error) {
	if len(n.periodic) == 0 {
		return nil, nil
	}
	names := make([]string, len(n.periodic))
	for i, p := range n.periodic {
		names[i] = p.job.Name
	}
	last, err := n.store.LastTicks(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("orderly: periodic jobs: %w", err)
	}
	now := n.clock.Now()
	out := make([]PeriodicStatus, len(n.periodic))
	for i, p := range n.periodic {
		out[i] = PeriodicStatus{Name: p.job.Name, Queue: p.job.Queue, Schedule: p.job.Schedule, ID: p.job.ID,
			Last: last[i], Next: p.sched.Next(maxTime(last[i], now))}
	}
	return out, nil
}
