package orderly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/internal/engine"
	"github.com/orderlyhq/orderly/persistence"
)

// maxErrorBytes bounds an error message stored with a job.
const maxErrorBytes = 4096

// processor adapts a worker's handler, wrapped in the server middleware, to
// the shard actor: it runs one call and converts its outcome, once, into
// the store's failures with their retry times (Worker.RetryIn).
func (n *Node) processor(w Worker, ec engine.Config) shard.Processor {
	h := w.Handler
	for i := len(n.cfg.Middleware) - 1; i >= 0; i-- {
		h = n.cfg.Middleware[i](h)
	}
	log := ec.Logger.With("queue", w.Queue)
	clk := ec.Clock
	return func(ctx context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		batch := newBatch(b)
		// The shard actor gives ctx the call's deadline (w.Timeout).
		err := call(ctx, h, batch, log)
		if err != nil && errors.Is(context.Cause(ctx), shard.ErrCallDeadline) {
			err = fmt.Errorf("timed out after %s: %w", w.Timeout, err)
		}
		now := clk.Now()
		fail := func(j persistence.Job, e error) persistence.Failure {
			msg := "failed"
			if e != nil && e.Error() != "" {
				msg = e.Error()
			}
			if len(msg) > maxErrorBytes {
				msg = msg[:maxErrorBytes]
			}
			return persistence.Failure{ID: j.ID, Error: msg, RetryAt: now.Add(w.RetryIn(j.RetryCount + 1))}
		}
		if err == nil {
			var bad map[string]error
			if w.State {
				bad = collectStates(b, batch.Jobs, nil, w.MaxStateBytes)
			}
			bad = collectEmits(b, batch.Jobs, nil, now, bad)
			bad = collectResults(b, batch.Jobs, nil, w.RetainFinished > 0, bad)
			if len(bad) == 0 {
				return nil, nil
			}
			out := make([]persistence.Failure, 0, len(bad))
			for id, e := range bad {
				out = append(out, fail(jobByID(b, id), e))
			}
			return out, nil
		}
		pf, partial := AsPartialFailure(err)
		if !partial {
			out := make([]persistence.Failure, len(b.Jobs))
			for i, j := range b.Jobs {
				out[i] = fail(j, err)
			}
			return out, err
		}
		var out []persistence.Failure
		failed := map[string]bool{}
		for _, j := range b.Jobs {
			if e, ok := pf.Failed[j.ID]; ok {
				out = append(out, fail(j, e))
				failed[j.ID] = true
			}
		}
		var bad map[string]error
		if w.State {
			bad = collectStates(b, batch.Jobs, failed, w.MaxStateBytes)
		}
		bad = collectEmits(b, batch.Jobs, failed, now, bad)
		for id, e := range collectResults(b, batch.Jobs, failed, w.RetainFinished > 0, bad) {
			out = append(out, fail(jobByID(b, id), e))
		}
		if len(out) < len(pf.Failed) {
			for id := range pf.Failed {
				if !inBatch(b, id) {
					log.Warn("handler failed an id that is not in the batch; ignored", "shard", b.Shard, "job_id", id)
				}
			}
		}
		return out, nil
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
