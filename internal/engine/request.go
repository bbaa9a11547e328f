package engine

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// request sends msg to the actor at to and waits for its answer until ctx
// ends. Unlike protoactor's RequestFuture it needs no timeout argument and
// no goroutine: the answer goes to a process registered for this request
// only.
func request(ctx context.Context, sys *actor.ActorSystem, to *actor.PID, msg any) (any, error) {
	reply := replyProcess(make(chan any, 1))
	pid, ok := sys.ProcessRegistry.Add(reply, "orderly-request"+sys.ProcessRegistry.NextId())
	if !ok {
		return nil, fmt.Errorf("cannot register a reply process")
	}
	defer sys.ProcessRegistry.Remove(pid)
	sys.Root.RequestWithCustomSender(to, msg, pid)
	select {
	case res := <-reply:
		if dl, ok := res.(*actor.DeadLetterResponse); ok {
			return nil, fmt.Errorf("no actor at %s", dl.GetTarget().GetId())
		}
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// replyProcess receives the answer to one request.
type replyProcess chan any

func (p replyProcess) SendUserMessage(_ *actor.PID, m any) {
	_, msg, _ := actor.UnwrapEnvelope(m)
	select {
	case p <- msg:
	default: // an answer came already
	}
}

func (p replyProcess) SendSystemMessage(*actor.PID, any) {}

func (p replyProcess) Stop(*actor.PID) {}
