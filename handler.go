package orderly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/internal/deferred"
	"github.com/orderlyhq/orderly/internal/engine"
	"github.com/orderlyhq/orderly/persistence"
)

// maxErrorBytes bounds an error message stored with a job.
const maxErrorBytes = 4096

// processor adapts a worker's handler, wrapped in the server middleware, to
// the shard actor: it runs one call and converts its outcome, once, into
// the store's failures with their retry times (Worker.RetryIn), and the
// snoozes, deaths and discards the handler chose (Snooze, Dead, Discard)
// set on b for the settle.
func (n *Node) processor(w Worker, ec engine.Config) shard.Processor {
	h := w.Handler
	for i := len(n.cfg.Middleware) - 1; i >= 0; i-- {
		h = n.cfg.Middleware[i](h)
	}
	log := ec.Logger.With("queue", w.Queue)
	clk := ec.Clock
	return func(ctx context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		batch := newBatch(b)
		d := deferred.From(ctx)
		if d != nil {
			// A handler may hold the call (the pull broker does): its
			// outcome is converted when it ends, against the window's
			// deadline context.
			dctx := d.Context()
			d.SetOutcome(func(err error) ([]persistence.Failure, error) {
				return w.outcome(dctx, b, batch, err, clk.Now(), log)
			})
		}
		// The shard actor gives ctx the call's deadline (w.Timeout).
		err := call(ctx, h, batch, log)
		if d != nil && d.Held() && errors.Is(err, deferred.ErrHeld) {
			return nil, err
		}
		return w.outcome(ctx, b, batch, err, clk.Now(), log)
	}
}

// outcome converts what a call of w over b returned, err, into the store's
// failures and the call's error; batch is what the handler saw, ctx the
// call's context (its cause says whether the call ran out of time).
func (w *Worker) outcome(ctx context.Context, b *persistence.Batch, batch *Batch, err error, now time.Time, log *slog.Logger) ([]persistence.Failure, error) {
	if err != nil && errors.Is(context.Cause(ctx), shard.ErrCallDeadline) {
		err = fmt.Errorf("timed out after %s: %w", w.Timeout, err)
	}
	o := &outcomes{b: b, retryIn: w.RetryIn, now: now}
	if err == nil {
		var bad map[string]error
		if w.State {
			bad = collectStates(b, batch.Jobs, nil, w.MaxStateBytes)
		}
		bad = collectEmits(b, batch.Jobs, nil, o.now, bad)
		bad = collectResults(b, batch.Jobs, nil, w.RetainFinished > 0, bad)
		for id, e := range bad {
			o.fail(jobByID(b, id), e)
		}
		return o.failures, nil
	}
	pf, partial := AsPartialFailure(err)
	if !partial {
		oc, chosen := asOutcome(err)
		for _, j := range b.Jobs {
			if chosen {
				o.choose(j, oc)
			} else {
				o.fail(j, err)
			}
		}
		if chosen {
			return nil, nil
		}
		return o.failures, err
	}
	failed := map[string]bool{}
	for _, j := range b.Jobs {
		if e, ok := pf.Failed[j.ID]; ok {
			o.decide(j, e)
			failed[j.ID] = true
		}
	}
	var bad map[string]error
	if w.State {
		bad = collectStates(b, batch.Jobs, failed, w.MaxStateBytes)
	}
	bad = collectEmits(b, batch.Jobs, failed, o.now, bad)
	for id, e := range collectResults(b, batch.Jobs, failed, w.RetainFinished > 0, bad) {
		o.fail(jobByID(b, id), e)
	}
	if len(failed) < len(pf.Failed) {
		for id := range pf.Failed {
			if !inBatch(b, id) {
				log.Warn("handler failed an id that is not in the batch; ignored", "shard", b.Shard, "job_id", id)
			}
		}
	}
	return o.failures, nil
}

// outcomes collects what one call decided for its ids that did not
// succeed: failures (returned to the shard actor) and the outcomes the
// handler chose (set on the batch).
type outcomes struct {
	b        *persistence.Batch
	retryIn  RetryPolicy
	now      time.Time
	failures []persistence.Failure
}

// decide records e, an id's error: the outcome it asks for, or a failure.
func (o *outcomes) decide(j persistence.Job, e error) {
	if oc, ok := asOutcome(e); ok {
		o.choose(j, oc)
		return
	}
	o.fail(j, e)
}

// fail records a failure of j, retrying after the worker's policy.
func (o *outcomes) fail(j persistence.Job, e error) {
	msg := "failed"
	if e != nil && e.Error() != "" {
		msg = e.Error()
	}
	o.failures = append(o.failures, persistence.Failure{ID: j.ID, Error: truncateError(msg),
		RetryAt: o.now.Add(o.retryIn(j.RetryCount+1, e))})
}

// choose records the outcome oc for j.
func (o *outcomes) choose(j persistence.Job, oc *outcomeError) {
	switch oc.kind {
	case outcomeSnooze:
		o.b.Snoozes = append(o.b.Snoozes, persistence.Snooze{ID: j.ID, RetryAt: o.now.Add(oc.delay)})
	case outcomeDead:
		o.b.Deaths = append(o.b.Deaths, persistence.Death{ID: j.ID, Reason: oc.reasonText()})
	default:
		o.b.Discards = append(o.b.Discards, persistence.Discard{ID: j.ID, Reason: oc.reasonText()})
	}
}

// call runs the handler, turning a panic into a failure of the whole call.
func call(ctx context.Context, h HandlerFunc, b *Batch, log *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("handler panicked; the batch fails", "queue", b.Queue, "shard", b.Shard, "delivery", b.Delivery,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return h(ctx, b)
}

func jobByID(b *persistence.Batch, id string) persistence.Job {
	for _, j := range b.Jobs {
		if j.ID == id {
			return j
		}
	}
	return persistence.Job{ID: id}
}

func inBatch(b *persistence.Batch, id string) bool {
	for _, j := range b.Jobs {
		if j.ID == id {
			return true
		}
	}
	return false
}

// delivery names a delivery attempt of a batch:
// "<queue>/<shard>/<epoch>/<seq>" (the token is "<epoch>/<owner>").
// It is built in one buffer: one allocation per batch, against two for
// the concatenation of its parts (BenchmarkDelivery).
func delivery(b *persistence.Batch) string {
	epoch, _, _ := strings.Cut(b.Token, "/")
	var buf [96]byte
	out := append(buf[:0], b.Queue...)
	out = append(out, '/')
	out = strconv.AppendInt(out, int64(b.Shard), 10)
	out = append(out, '/')
	out = append(out, epoch...)
	out = append(out, '/')
	out = strconv.AppendInt(out, b.Seq, 10)
	return string(out)
}
