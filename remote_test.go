package orderly_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/messages"
)

// The enqueue actor comes back under its name if it stops, and the PID
// held before (the one AskEnqueue and remote clients use) reaches the new
// instance. Remote senders cannot stop it at all (cmd/orderly's
// TestActorRemoteSystemMessages); this is the net below that.
func TestEnqueueActorComesBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.start(orderly.Config{
		Workers: []orderly.Worker{{Queue: "q", Handler: func(context.Context, *orderly.Batch) error { return nil }}},
	})
	for round := range 3 {
		orderly.StopEnqueueActor(n)
		require.Eventually(t, func() bool {
			res, err := n.AskEnqueue(e.ctx, &messages.Enqueue{Queue: "q", Jobs: []*messages.Job{{Id: "back"}}})
			return err == nil && res.GetEnqueued() == 1
		}, 30*time.Second, 50*time.Millisecond, "round %d", round)
	}
}

// A wildcard actor address needs a concrete advertised address.
func TestActorAddrConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	workers := []orderly.Worker{{Queue: "q", Handler: func(context.Context, *orderly.Batch) error { return nil }}}
	for _, bad := range []orderly.Config{
		{ActorAddr: "0.0.0.0:0"},
		{ActorAddr: "[::]:0"},
		{ActorAddr: ":0"},
		{ActorAddr: "no-port"},
		{ActorAddr: "0.0.0.0:0", ActorAdvertise: "0.0.0.0:7000"},
		{ActorAddr: "0.0.0.0:0", ActorAdvertise: "host-without-port"},
		{ActorAddr: "0.0.0.0:0", ActorAdvertise: "10.0.0.5:0"},
		{ActorAdvertise: "127.0.0.1:7000"},
	} {
		bad.Workers = workers
		_, err := orderly.NewNode(e.store, &bad)
		require.Error(t, err, "%+v", bad)
	}
	for _, good := range []orderly.Config{
		{ActorAddr: "127.0.0.1:0"},
		{ActorAddr: "0.0.0.0:0", ActorAdvertise: "10.0.0.5:8090"},
		{ActorAddr: "[::]:8090", ActorAdvertise: "node-1.internal:8090", ActorToken: "t"},
	} {
		good.Workers = workers
		_, err := orderly.NewNode(e.store, &good)
		require.NoError(t, err, "%+v", good)
	}
}
