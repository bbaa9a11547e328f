// Package orderlytest helps test handlers, middleware and transports: it
// builds batches and jobs as a node hands them to a handler (with state,
// brought by a timer, recording emits), and reads what the handler left on
// each job. A handler is an ordinary function, so a test calls it directly:
//
//	b := orderlytest.NewBatch("orders",
//		orderlytest.Stateful(orderly.Job{ID: "order-7"}, []byte(`{"paid":false}`), 3))
//	err := handler(ctx, b)
//	out := orderlytest.OutcomeOf(b.Jobs[0]) // out.State, out.Emits, ...
package orderlytest

import (
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/internal/hooks"
)

// NewBatch returns a batch of queue's jobs as a node hands it to a handler:
// shard 0, a delivery name of its own, and jobs that record what the
// handler emits for them (Job.Emit; OutcomeOf reads it). The jobs keep the
// state Stateful or Timer gave them.
func NewBatch(queue string, jobs ...orderly.Job) *orderly.Batch {
	rec := hooks.Recording.(func(orderly.Job) orderly.Job)
	out := make([]orderly.Job, len(jobs))
	for i, j := range jobs {
		out[i] = rec(j)
	}
	return &orderly.Batch{Queue: queue, Delivery: queue + "/0/1/1", Jobs: out}
}

// Stateful returns a copy of j as a stateful queue hands it over: with the
// id's state data at version (0: the id never had a state; nil data with a
// version above 0: its state was deleted).
func Stateful(j orderly.Job, data []byte, version int64) orderly.Job {
	return hooks.Stateful.(func(orderly.Job, []byte, int64, bool) orderly.Job)(j, data, version, false)
}

// Timer returns a copy of j as a stateful queue hands it over when the id's
// timer fired (Job.Timer reports true): with the id's state data at
// version, as Stateful.
func Timer(j orderly.Job, data []byte, version int64) orderly.Job {
	return hooks.Stateful.(func(orderly.Job, []byte, int64, bool) orderly.Job)(j, data, version, true)
}

// Outcome is what a handler left on one job of its batch: the changes it
// made to the id's state and timer, committed by a node when the id is
// acknowledged, and the jobs it emitted.
type Outcome struct {
	// StateChanged is set when the handler set or deleted the state;
	// StateDeleted for a delete, State the new state otherwise.
	StateChanged, StateDeleted bool
	State                      []byte
	// TimerChanged is set when the handler set or cleared the id's timer;
	// TimerCleared for a clear, TimerAt the new time otherwise.
	TimerChanged, TimerCleared bool
	TimerAt                    time.Time
	// Emits are the jobs emitted for the id (a batch from NewBatch records
	// them).
	Emits []orderly.Emit
}

// OutcomeOf returns what the handler left on j.
func OutcomeOf(j orderly.Job) Outcome {
	f := hooks.Outcome.(func(orderly.Job) ([]byte, bool, bool, time.Time, bool, bool, []orderly.Emit))
	var o Outcome
	o.State, o.StateDeleted, o.StateChanged, o.TimerAt, o.TimerCleared, o.TimerChanged, o.Emits = f(j)
	return o
}
