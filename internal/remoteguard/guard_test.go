package remoteguard

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	g := New(Config{Targets: []string{"enqueue"}, Local: func() string { return "10.0.0.5:8090" }, Logger: slog.New(slog.DiscardHandler)})
	b := &remote.MessageBatch{
		TypeNames: []string{"orderly.messages.v1.Enqueue", "actor.Stop", "actor.PoisonPill", "actor.Watch"},
		Targets:   []*actor.PID{{Address: "127.0.0.1:8090", Id: "enqueue"}, {Address: "127.0.0.1:8090", Id: "node"}},
		Senders:   []*actor.PID{{Address: "1.2.3.4:5", Id: "future$1"}},
		Envelopes: []*remote.MessageEnvelope{
			{TypeId: 0, Target: 0, Sender: 1},                  // kept
			{TypeId: 1, Target: 0},                             // Stop
			{TypeId: 2, Target: 0},                             // PoisonPill
			{TypeId: 3, Target: 0},                             // Watch
			{TypeId: 0, Target: 1, Sender: 1},                  // to node
			{TypeId: 9, Target: 0},                             // type out of range
			{TypeId: 0, Target: 5},                             // target out of range
			{TypeId: 0, Target: -1},                            // negative target
			{TypeId: 0, Target: 0, Sender: 2},                  // sender out of range
			{TypeId: 0, Target: 0, SerializerId: 7},            // unknown serializer
			nil,                                                // empty
			{TypeId: 0, Target: 0, SerializerId: 1, Sender: 0}, // kept: JSON, no sender
		},
	}
	g.Filter(b)
	require.Len(t, b.Envelopes, 2)
	require.Equal(t, int32(1), b.Envelopes[0].Sender)
	require.Equal(t, int32(1), b.Envelopes[1].SerializerId)
	require.Equal(t, "10.0.0.5:8090", b.Targets[0].Address, "readdressed to the local address")
	require.Equal(t, "127.0.0.1:8090", b.Targets[1].Address, "not an allowed target: left alone")
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	g := New(Config{Token: "s3cret", Logger: slog.New(slog.DiscardHandler)})
	for _, md := range []metadata.MD{nil, metadata.Pairs(Header, "guess"), metadata.Pairs("authorization", "s3cret")} {
		err := g.authenticate(metadata.NewIncomingContext(context.Background(), md))
		require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", md)
	}
	require.NoError(t, g.authenticate(metadata.NewIncomingContext(context.Background(), metadata.Pairs(Header, "s3cret"))))
	creds, err := Credentials("s3cret").GetRequestMetadata(context.Background())
	require.NoError(t, err)
	require.Equal(t, map[string]string{Header: "s3cret"}, creds)
	require.NoError(t, New(Config{}).authenticate(context.Background()), "no token: every connection")
}

func TestHosts(t *testing.T) {
	t.Parallel()
	for host, want := range map[string][2]bool{ // loopback, wildcard
		"127.0.0.1": {true, false}, "::1": {true, false}, "localhost": {true, false}, "LocalHost": {true, false},
		"0.0.0.0": {false, true}, "::": {false, true}, "": {false, true}, "10.0.0.5": {false, false}, "node.internal": {false, false},
	} {
		require.Equal(t, want, [2]bool{IsLoopback(host), IsWildcard(host)}, host)
	}
}

// Whatever a peer sends, the envelopes Filter keeps are ones protoactor's
// reader can take without panicking: indexes in range, a known serializer,
// an orderly message to an allowed target.
func FuzzFilter(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0}, "orderly.messages.v1.Enqueue", "enqueue")
	f.Add([]byte{1, 0, 0, 0, 9, 9, 9, 9}, "actor.Stop", "node")
	f.Add([]byte{0, 255, 0, 1}, "orderly.messages.v1.StatsRequest", "enqueue")
	g := New(Config{Targets: []string{"enqueue"}, Logger: slog.New(slog.DiscardHandler)})
	f.Fuzz(func(t *testing.T, raw []byte, typ, target string) {
		b := &remote.MessageBatch{
			TypeNames: []string{typ, "actor.Stop"},
			Targets:   []*actor.PID{{Id: target}, nil},
			Senders:   []*actor.PID{{Id: "s"}},
		}
		for i := 0; i+4 <= len(raw); i += 4 {
			b.Envelopes = append(b.Envelopes, &remote.MessageEnvelope{
				TypeId: int32(int8(raw[i])), Target: int32(int8(raw[i+1])), Sender: int32(int8(raw[i+2])), SerializerId: int32(int8(raw[i+3])),
			})
		}
		g.Filter(b)
		for _, e := range b.Envelopes {
			require.True(t, e.TypeId >= 0 && int(e.TypeId) < len(b.TypeNames))
			require.True(t, e.Target >= 0 && int(e.Target) < len(b.Targets) && b.Targets[e.Target] != nil)
			require.True(t, e.Sender >= 0 && int(e.Sender) <= len(b.Senders))
			require.Contains(t, []int32{0, 1}, e.SerializerId)
			require.True(t, strings.HasPrefix(b.TypeNames[e.TypeId], TypePrefix))
			require.Equal(t, "enqueue", b.Targets[e.Target].Id)
		}
	})
}
