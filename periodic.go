package orderly

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/orderlyhq/orderly/internal/engine"
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
	// Schedule says when the job ticks: ParseCron's schedules, or any
	// other implementation.
	Schedule Schedule
	// ID is the enqueued job's id; the job merges like any other (same id:
	// one job).
	ID string
	// Payload is the enqueued payload [empty]. Its score is the tick's
	// time.
	Payload []byte
}

// Schedule says when a periodic job ticks. Implementations must be safe for
// concurrent use; a fmt.Stringer shows its String in PeriodicStatus.
type Schedule interface {
	// Next returns the first tick strictly after t, or the zero time when
	// there is none.
	Next(t time.Time) time.Time
}

// MinEvery is the shortest period of an "@every <duration>" schedule: the
// cron parser counts whole seconds, and would silently turn a shorter or
// fractional period (0s, 1ms, -1s, 1.5s) into another one.
const MinEvery = time.Second

// ParseCron parses a standard 5-field cron expression ("0 3 * * *", in the
// node's local time zone unless it starts with CRON_TZ=...) or a
// descriptor such as "@hourly" or "@every 10s". The period of "@every" is
// a whole number of seconds, at least MinEvery. The schedule's String is
// the expression.
func ParseCron(expr string) (Schedule, error) {
	sched, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", expr, err)
	}
	if err := checkEvery(expr); err != nil {
		return nil, fmt.Errorf("schedule %q: %w", expr, err)
	}
	return cronSchedule{expr: expr, sched: sched}, nil
}

// checkEvery checks the period of an "@every" expression that the cron
// parser accepted, read as it reads it (after a CRON_TZ= or TZ= prefix).
func checkEvery(expr string) error {
	spec := expr
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		if i := strings.Index(spec, " "); i >= 0 {
			spec = strings.TrimSpace(spec[i:])
		}
	}
	rest, ok := strings.CutPrefix(spec, "@every ")
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(rest)
	switch {
	case err != nil:
		return err
	case d < MinEvery:
		return fmt.Errorf("the period %s is shorter than the minimum of %s (the cron parser would tick once a second)", rest, MinEvery)
	case d%time.Second != 0:
		return fmt.Errorf("the period %s is not a whole number of seconds (the cron parser would tick every %s)", rest, d.Truncate(time.Second))
	}
	return nil
}

// cronSchedule is a parsed cron expression.
type cronSchedule struct {
	expr  string
	sched cron.Schedule
}

func (c cronSchedule) Next(t time.Time) time.Time { return c.sched.Next(t) }

func (c cronSchedule) String() string { return c.expr }

// scheduleString shows a schedule in PeriodicStatus.
func scheduleString(s Schedule) string {
	if st, ok := s.(fmt.Stringer); ok {
		return st.String()
	}
	return fmt.Sprintf("%T", s)
}

// validatePeriodic checks the node's periodic jobs against its workers.
func validatePeriodic(jobs []PeriodicJob, workers []Worker) ([]engine.Periodic, error) {
	queues := map[string]bool{}
	for _, w := range workers {
		queues[w.Queue] = true
	}
	seen := map[string]bool{}
	out := make([]engine.Periodic, 0, len(jobs))
	for i, j := range jobs {
		switch {
		case j.Name == "":
			return nil, fmt.Errorf("orderly: periodic job %d has no name", i)
		case seen[j.Name]:
			return nil, fmt.Errorf("orderly: two periodic jobs are named %s", j.Name)
		case !queues[j.Queue]:
			return nil, fmt.Errorf("orderly: periodic job %s: queue %q is not one of the node's workers", j.Name, j.Queue)
		case j.Schedule == nil:
			return nil, fmt.Errorf("orderly: periodic job %s has no Schedule", j.Name)
		}
		if err := persistence.ValidateID(j.ID, -1); err != nil {
			return nil, fmt.Errorf("orderly: periodic job %s: id: %w", j.Name, err)
		}
		seen[j.Name] = true
		out = append(out, engine.Periodic{Name: j.Name, Queue: j.Queue, ID: j.ID, Payload: j.Payload, Schedule: j.Schedule})
	}
	return out, nil
}

// PeriodicStatus is one periodic job as the node sees it.
type PeriodicStatus struct {
	Name, Queue, Schedule, ID string
	// Last is the last tick enqueued (by any node), zero if none; Next the
	// next one due.
	Last, Next time.Time
}
