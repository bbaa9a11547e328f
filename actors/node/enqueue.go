package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/actors/supervisor"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
)

// Limits of the enqueue actor.
const (
	// MaxEnqueueInFlight is how many Enqueue requests the actor serves at
	// once; further requests wait in its queue.
	MaxEnqueueInFlight = 64
	// MaxEnqueueWaiting bounds that queue: beyond it a request is answered
	// at once with CODE_UNAVAILABLE (busy), so that a flood of messages
	// cannot grow the node's memory without bound.
	MaxEnqueueWaiting = 10_000
	// enqueueTimeout bounds one request's store calls.
	enqueueTimeout = 10 * time.Second
)

// EnqueueConfig configures the enqueue actor.
type EnqueueConfig struct {
	Store interface {
		persistence.Producer
		persistence.QueueStore
	}
	Logger *slog.Logger
	Now    func() time.Time
	// Members answers MembersRequest; nil answers with no members.
	Members func() *messages.MembersResponse
}

// EnqueueProps returns the props of the enqueue actor.
func EnqueueProps(cfg EnqueueConfig) *actor.Props {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return actor.PropsFromProducer(func() actor.Actor { return &enqueuer{cfg: cfg} },
		actor.WithReceiverMiddleware(supervisor.LogPanics(cfg.Logger)))
}

// enqueuer serves Enqueue and StatsRequest off its goroutine (store calls
// block), at most MaxEnqueueInFlight at once; the rest wait in order.
type enqueuer struct {
	cfg     EnqueueConfig
	base    context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // running requests
	running int
	queue   []pending
}

type pending struct {
	to  *actor.PID
	msg any
}

type requestDone struct{}

func (e *enqueuer) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		e.base, e.cancel = context.WithCancel(context.Background())
	case *actor.Stopping, *actor.Restarting:
		e.cancel()
		e.wg.Wait()
	case *messages.Enqueue, *messages.StatsRequest:
		if c.Sender() == nil {
			return // nobody to answer; a fire-and-forget Enqueue is refused
		}
		if len(e.queue) >= MaxEnqueueWaiting {
			c.Respond(busy(m))
			return
		}
		e.queue = append(e.queue, pending{to: c.Sender(), msg: m})
		e.next(c)
	case *messages.MembersRequest:
		if e.cfg.Members != nil {
			c.Respond(e.cfg.Members())
		} else {
			c.Respond(&messages.MembersResponse{})
		}
	case requestDone:
		e.running--
		e.next(c)
	case *actor.Stopped:
	default:
		e.cfg.Logger.Warn("enqueue actor ignores an unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// busy is the answer to a request refused because too many wait.
func busy(msg any) any {
	err := &messages.Error{Code: messages.Code_CODE_UNAVAILABLE, Message: fmt.Sprintf("busy: %d requests waiting; retry later", MaxEnqueueWaiting)}
	if _, ok := msg.(*messages.StatsRequest); ok {
		return &messages.StatsResponse{Error: err}
	}
	return &messages.EnqueueResult{Error: err}
}

func (e *enqueuer) next(c actor.Context) {
	for e.running < MaxEnqueueInFlight && len(e.queue) > 0 {
		p := e.queue[0]
		e.queue = e.queue[1:]
		e.running++
		self, root := c.Self(), c.ActorSystem().Root
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			ctx, cancel := context.WithTimeout(e.base, enqueueTimeout)
			defer cancel()
			root.Send(p.to, e.serve(ctx, p.msg))
			root.Send(self, requestDone{})
		}()
	}
}

func (e *enqueuer) serve(ctx context.Context, msg any) any {
	switch m := msg.(type) {
	case *messages.Enqueue:
		jobs, err := JobsFromMessage(m, e.cfg.Now())
		var res persistence.EnqueueResult
		if err == nil {
			res, err = persistence.EnqueueReport(ctx, e.cfg.Store, m.GetQueue(), jobs)
		}
		if err != nil {
			return &messages.EnqueueResult{Error: ErrorMessage(err, e.cfg.Logger)}
		}
		return &messages.EnqueueResult{Enqueued: int64(len(jobs)), Duplicates: int64(res.Duplicates)}
	case *messages.StatsRequest:
		queues := m.GetQueues()
		if len(queues) == 0 {
			specs, err := e.cfg.Store.Queues(ctx)
			if err != nil {
				return &messages.StatsResponse{Error: ErrorMessage(err, e.cfg.Logger)}
			}
			for _, s := range specs {
				queues = append(queues, s.Name)
			}
		}
		stats, err := e.cfg.Store.Stats(ctx, queues...)
		if err != nil {
			return &messages.StatsResponse{Error: ErrorMessage(err, e.cfg.Logger)}
		}
		out := &messages.StatsResponse{}
		for _, s := range stats {
			out.Queues = append(out.Queues, &messages.QueueStats{
				Name: s.Name, Shards: int32(s.Shards), Length: s.Length, Fresh: s.Fresh, Retries: s.Retries,
				MorgueLength: s.MorgueLength, Lag: s.Lag, Busy: s.Busy, Processed: s.Processed, Failed: s.Failed,
			})
		}
		return out
	}
	return nil
}

// JobsFromMessage converts an Enqueue message to store jobs: the due time by
// persistence.PerformAt and the expiry by persistence.ExpiresAt, the rules
// every transport shares; the store
// validates the rest (persistence.ValidateJobs). Errors are
// *persistence.FieldError.
func JobsFromMessage(m *messages.Enqueue, now time.Time) ([]persistence.NewJob, error) {
	if m.GetQueue() == "" {
		return nil, &persistence.FieldError{Field: "queue", Index: -1, Reason: "must not be empty"}
	}
	jobs := make([]persistence.NewJob, len(m.GetJobs()))
	for i, j := range m.GetJobs() {
		if j == nil {
			return nil, &persistence.FieldError{Index: i, Reason: "must not be null"}
		}
		at, err := persistence.PerformAt(j.PerformAt, j.PerformIn, now, i)
		if err != nil {
			return nil, err
		}
		exp, err := persistence.ExpiresAt(j.ExpiresAt, j.ExpiresIn, now, i)
		if err != nil {
			return nil, err
		}
		jobs[i] = persistence.NewJob{ID: j.GetId(), Payload: j.GetPayload(), Score: j.Score, PerformAt: at, Headers: j.GetHeaders(), DedupKey: j.GetDedupKey(),
			ExpiresAt: exp, Priority: int(j.GetPriority())}
	}
	return jobs, nil
}

// ErrorMessage converts an error to its message form; unexpected errors
// are logged and answered without internals. A field at fault is named as
// the HTTP API names it (persistence.FieldError.Path).
func ErrorMessage(err error, log *slog.Logger) *messages.Error {
	var fe *persistence.FieldError
	switch {
	case errors.As(err, &fe):
		return &messages.Error{Code: messages.Code_CODE_INVALID, Message: fe.Error(), Field: fe.Path()}
	case errors.Is(err, persistence.ErrUnknownQueue):
		return &messages.Error{Code: messages.Code_CODE_UNKNOWN_QUEUE, Message: err.Error(), Field: "queue"}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &messages.Error{Code: messages.Code_CODE_UNAVAILABLE, Message: "store unavailable: " + err.Error()}
	}
	log.Error("enqueue by message failed", "err", err)
	return &messages.Error{Code: messages.Code_CODE_UNAVAILABLE, Message: "store unavailable"}
}
