// Package remoteguard guards a node's protoactor remote (its actor
// address): gRPC interceptors that
//
//   - authenticate every connection by a shared token carried in gRPC
//     metadata (Header), when one is configured;
//   - pass on only the envelopes a node serves remotely: orderly's own
//     protobuf messages (TypePrefix) addressed to an allowed actor
//     (Config.Targets). Everything else is dropped before protoactor reads
//     it: system messages (Stop, Watch, Unwatch, Terminate...), PoisonPill,
//     messages for any other actor, and envelopes whose indexes or
//     serializer are out of range (on which protoactor's reader would
//     panic and take the process down);
//   - refuse the unary calls of protoactor's Remoting service
//     (ListProcesses, GetProcessDiagnostics), which protoactor does not
//     implement: it panics on them.
//
// Credentials is the client side: the token as gRPC per-call credentials.
package remoteguard

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Header is the gRPC metadata key carrying the token.
const Header = "orderly-actor-token"

// TypePrefix is the protobuf name prefix of the messages a node accepts
// remotely (package orderly.messages.v1).
const TypePrefix = "orderly.messages.v1."

// Serializer ids protoactor defines: protobuf and JSON.
const (
	serializerProto = 0
	serializerJSON  = 1
)

// logEvery throttles the guard's warnings: at most one line per kind per
// interval, with a count of what was refused since the last line.
const logEvery = 10 * time.Second

// Config configures the guard.
type Config struct {
	// Token, when set, is required from every connection; empty accepts
	// every connection.
	Token string
	// Targets are the actor ids that may receive remote messages.
	Targets []string
	// Local, if set, returns the address the actor system knows itself by:
	// the targets of accepted envelopes are readdressed to it, so that a
	// client that reached the node at another of its addresses (127.0.0.1
	// for a node advertising its LAN address) is served rather than
	// forwarded.
	Local func() string
	// Logger receives the warnings about refused connections and dropped
	// messages [slog.Default()].
	Logger *slog.Logger
}

// Guard holds the interceptors' state.
type Guard struct {
	cfg     Config
	log     *slog.Logger
	targets map[string]bool

	mu      sync.Mutex
	refused throttle // connections without the token
	dropped throttle // envelopes not passed on
}

// throttle counts refusals between two log lines.
type throttle struct {
	count  int64
	last   time.Time
	sample string
}

// New returns a guard.
func New(cfg Config) *Guard {
	g := &Guard{cfg: cfg, log: cfg.Logger, targets: map[string]bool{}}
	if g.log == nil {
		g.log = slog.Default()
	}
	for _, t := range cfg.Targets {
		g.targets[t] = true
	}
	return g
}

// ServerOptions returns the gRPC server options that install the guard
// (remote.WithServerOptions).
func (g *Guard) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(g.unary), grpc.ChainStreamInterceptor(g.stream)}
}

func (g *Guard) unary(ctx context.Context, _ any, info *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
	if err := g.authenticate(ctx); err != nil {
		return nil, err
	}
	return nil, status.Errorf(codes.Unimplemented, "%s is not served", info.FullMethod)
}

func (g *Guard) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := g.authenticate(ss.Context()); err != nil {
		return err
	}
	return handler(srv, &filterStream{ServerStream: ss, g: g})
}

// authenticate checks the token of the call's metadata.
func (g *Guard) authenticate(ctx context.Context) error {
	if g.cfg.Token == "" {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get(Header) {
		if subtle.ConstantTimeCompare([]byte(v), []byte(g.cfg.Token)) == 1 {
			return nil
		}
	}
	from := "unknown"
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		from = p.Addr.String()
	}
	g.note(&g.refused, from, "actor remote refused a connection without a valid token", "from")
	return status.Error(codes.Unauthenticated, "orderly: the actor remote needs a valid token")
}

// note counts a refusal and logs it, at most once per logEvery.
func (g *Guard) note(t *throttle, sample, msg, key string) {
	g.mu.Lock()
	t.count++
	if t.sample == "" {
		t.sample = sample
	}
	now := time.Now()
	if now.Sub(t.last) < logEvery {
		g.mu.Unlock()
		return
	}
	count, first := t.count, t.sample
	t.count, t.sample, t.last = 0, "", now
	g.mu.Unlock()
	g.log.Warn(msg, key, first, "count", count)
}

// filterStream passes on only the envelopes the guard accepts.
type filterStream struct {
	grpc.ServerStream
	g *Guard
}

func (s *filterStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	rm, ok := m.(*remote.RemoteMessage)
	if !ok {
		return nil
	}
	if b := rm.GetMessageBatch(); b != nil {
		s.g.Filter(b)
	}
	return nil
}

// Filter removes from b the envelopes the guard does not accept, in place.
func (g *Guard) Filter(b *remote.MessageBatch) {
	kept := b.Envelopes[:0]
	for _, e := range b.Envelopes {
		if why := g.refuse(b, e); why != "" {
			g.note(&g.dropped, why, "actor remote dropped messages it does not serve", "first")
			continue
		}
		kept = append(kept, e)
	}
	if g.cfg.Local != nil {
		local := g.cfg.Local()
		for _, t := range b.Targets {
			if t != nil && g.targets[t.Id] {
				t.Address = local
			}
		}
	}
	clear(b.Envelopes[len(kept):])
	b.Envelopes = kept
}

// refuse says why e is not passed on, or "" when it is.
func (g *Guard) refuse(b *remote.MessageBatch, e *remote.MessageEnvelope) string {
	if e == nil {
		return "empty envelope"
	}
	if e.TypeId < 0 || int(e.TypeId) >= len(b.TypeNames) {
		return "type index out of range"
	}
	if e.Target < 0 || int(e.Target) >= len(b.Targets) || b.Targets[e.Target] == nil {
		return "target index out of range"
	}
	if e.Sender < 0 || int(e.Sender) > len(b.Senders) || (e.Sender > 0 && b.Senders[e.Sender-1] == nil) {
		return "sender index out of range"
	}
	if e.SerializerId != serializerProto && e.SerializerId != serializerJSON {
		return fmt.Sprintf("serializer %d", e.SerializerId)
	}
	typ, target := b.TypeNames[e.TypeId], b.Targets[e.Target].GetId()
	if !strings.HasPrefix(typ, TypePrefix) {
		return fmt.Sprintf("%s to %s", typ, target)
	}
	if !g.targets[target] {
		return fmt.Sprintf("%s to %s", typ, target)
	}
	return ""
}

// Credentials returns the client side of the token: gRPC per-call
// credentials that send it (grpc.WithPerRPCCredentials, through
// remote.WithDialOptions). They are sent on plaintext connections too: a
// token crossing an untrusted network needs a tunnel or TLS around it.
func Credentials(token string) credentials.PerRPCCredentials { return tokenCreds(token) }

type tokenCreds string

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{Header: string(t)}, nil
}

func (tokenCreds) RequireTransportSecurity() bool { return false }

// IsLoopback reports whether host (a name or an IP, as in host:port) names
// this machine only: a loopback IP or "localhost".
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsWildcard reports whether host binds every interface: empty, 0.0.0.0 or
// ::.
func IsWildcard(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}
