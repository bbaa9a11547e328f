package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/messages"
)

// actorClient is the test process's one protoactor system with a remote,
// as a client process has. There is one per process: protoactor's remote
// sets gRPC's process-wide logger on every start, which races with the gRPC
// goroutines of an earlier remote.
var actorClient = sync.OnceValue(func() *actor.ActorSystem {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", 0,
		remote.WithEndpointWriterQueueSize(1024), remote.WithEndpointManagerQueueSize(1024)))
	r.Start()
	redistest.AtExit(func() {
		r.Shutdown(true)
		sys.Shutdown()
	})
	return sys
})

// enqueueByActor asks the enqueue actor at addr to enqueue id.
func enqueueByActor(t *testing.T, addr, id string) {
	t.Helper()
	res, err := actorClient().Root.RequestFuture(actor.NewPID(addr, "enqueue"), &messages.Enqueue{
		Queue: "default", Jobs: []*messages.Job{{Id: id, Payload: []byte("x")}},
	}, 30*time.Second).Result()
	require.NoError(t, err, id)
	require.Equal(t, int64(1), res.(*messages.EnqueueResult).GetEnqueued(), id)
}

// actorNode starts a node process on Redis with an actor address and waits
// until it is ready.
func actorNode(t *testing.T, args ...string) (*nodetest.Node, string) {
	t.Helper()
	srv := redistest.NewServer(t, redistest.Options{})
	port, err := redistest.FreePort()
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Args: append([]string{"--actor-addr", addr}, args...)})
	n.WaitReady()
	return n, addr
}

// A remote sender cannot stop or poison a node's actors: Stop and
// PoisonPill to the enqueue, keeper and node actors are dropped; remote
// enqueue keeps working and the node keeps serving all its shards.
func TestActorRemoteSystemMessages(t *testing.T) {
	n, addr := actorNode(t)
	sys := actorClient()
	enqueueByActor(t, addr, "before")
	for _, name := range []string{"enqueue", "node", "enqueue-keeper"} {
		pid := actor.NewPID(addr, name)
		sys.Root.Stop(pid)
		sys.Root.Poison(pid)
	}
	// One connection delivers in order: once this is answered, the node
	// has read the messages above.
	enqueueByActor(t, addr, "after")
	require.Eventually(t, func() bool {
		return strings.Contains(n.Logs(), "actor remote dropped messages it does not serve")
	}, 30*time.Second, 10*time.Millisecond)
	for i := range 20 {
		code, body := n.Do("GET", "/readyz", nil)
		require.Equal(t, 200, code, "%d: %s", i, body)
		enqueueByActor(t, addr, fmt.Sprint("later-", i))
	}
	require.Eventually(t, func() bool { return strings.Contains(n.Logs(), "job_id=later-19") }, 30*time.Second, 10*time.Millisecond)
	for _, bad := range []string{"well-known actor stopped", "actor panicked", "not ready"} {
		require.NotContains(t, n.Logs(), bad)
	}
}

// protoactor's Remoting service panics on the calls it does not implement,
// which would take the process down; the node refuses them.
func TestActorRemoteUnimplementedCalls(t *testing.T) {
	n, addr := actorNode(t)
	actorClient() // the process's gRPC logger is set before any gRPC use
	conn, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	c := remote.NewRemotingClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.ListProcesses(ctx, &remote.ListProcessesRequest{})
	require.ErrorContains(t, err, "not served")
	_, err = c.GetProcessDiagnostics(ctx, &remote.GetProcessDiagnosticsRequest{})
	require.ErrorContains(t, err, "not served")
	code, _ := n.Do("GET", "/readyz", nil)
	require.Equal(t, 200, code)
	enqueueByActor(t, addr, "still-here")
}

// An actor remote on every interface advertises actor_advertise_addr, and
// serves a client that reaches it there or at another of its addresses.
func TestActorRemoteAdvertise(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Options{})
	port, err := redistest.FreePort()
	require.NoError(t, err)
	advertised := fmt.Sprintf("localhost:%d", port)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Args: []string{
		"--actor-addr", fmt.Sprintf("0.0.0.0:%d", port), "--actor-advertise-addr", advertised, "--actor-public"}})
	n.WaitReady()
	code, body := n.Do("GET", "/api/v1/cluster", nil)
	require.Equal(t, 200, code)
	require.Contains(t, string(body), `"actor":"`+advertised+`"`)
	require.Contains(t, n.Logs(), "actor remote listens on a non-loopback address without a token or TLS (actor_public)")
	enqueueByActor(t, advertised, "through-advertised")
	enqueueByActor(t, fmt.Sprintf("127.0.0.1:%d", port), "through-another-address")
}

// The actor remote and gossip follow the HTTP listener's rule: beyond
// loopback, a secret or an explicit opt-in; a wildcard actor address needs
// an advertised one.
func TestExposureRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	port, err := redistest.FreePort()
	require.NoError(t, err)
	any := fmt.Sprintf("0.0.0.0:%d", port)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--actor-addr", any}, "set --actor-advertise-addr"},
		{[]string{"--actor-addr", any, "--actor-advertise-addr", "10.0.0.5:1"}, "without authentication: set --actor-tls-cert, --actor-tls-key and --actor-tls-ca (mutual TLS) or --actor-token (or listen on 127.0.0.1), or --actor-public to allow it"},
		{[]string{"--actor-addr", "127.0.0.1:0", "--actor-advertise-addr", "0.0.0.0:1"}, "--actor-advertise-addr: 0.0.0.0:1 binds every interface"},
		{[]string{"--bind", any}, "in plaintext: set --gossip-key (or bind 127.0.0.1), or --gossip-public to allow it"},
	} {
		n := nodetest.Launch(t, nodetest.Options{Redis: srv.URL(), Args: c.args})
		require.NotZero(t, n.Wait(30*time.Second), "%v", c.args)
		require.Contains(t, n.Logs(), c.want, "%v", c.args)
	}
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Args: []string{"--bind", any, "--gossip-public"}})
	n.WaitReady()
	require.Contains(t, n.Logs(), "gossip listens on a non-loopback address without a key (gossip_public)")
	n.Kill()
	n = nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Args: []string{"--bind", any, "--gossip-key", "MDEyMzQ1Njc4OWFiY2RlZg=="}})
	n.WaitReady()
	require.NotContains(t, n.Logs(), "gossip_public")
}
