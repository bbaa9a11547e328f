package orderly

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/remoteguard"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
)

// remoteQueueSize bounds protoactor remote's per-peer queues (its default
// preallocates 16 MiB per peer).
const remoteQueueSize = 4096

// network is what startNetwork started.
type network struct {
	remote  *remote.Remote
	members *cluster.Membership
	service *cluster.Service
}

// startNetwork starts protoactor remote (ActorAddr), the membership and the
// cluster service (Cluster; the service's loops start once the store is
// reachable); ctx bounds the first join of the seeds. Called by Start,
// without n.mu.
func (n *Node) startNetwork(ctx context.Context, sys *actor.ActorSystem) (network, error) {
	var nw network
	if n.cfg.ActorAddr != "" {
		r, err := n.startRemote(sys, n.cfg.ActorAddr)
		if err != nil {
			return nw, err
		}
		nw.remote = r
	}
	if n.cfg.Cluster == nil {
		return nw, nil
	}
	cc := n.cfg.Cluster
	c := cluster.Config{
		Name: n.cfg.Name, Bind: cc.Bind, Advertise: cc.Advertise, Join: cc.Join, RejoinInterval: cc.RejoinInterval,
		ProbeInterval: cc.ProbeInterval, ProbeTimeout: cc.ProbeTimeout, SuspicionMult: cc.SuspicionMult,
		SecretKey: cc.SecretKey, Label: cc.Label, Transport: cc.Transport, Clock: n.clock, Logger: n.log,
		Meta: cluster.Meta{HTTP: cc.HTTP, Queues: n.Queues(), Version: Version},
	}
	if nw.remote != nil {
		c.Meta.Actor = sys.Address()
	}
	c.Meta.Store = n.knownStoreID(ctx)
	m, err := cluster.Start(ctx, &c)
	if err != nil {
		if nw.remote != nil {
			nw.remote.Shutdown(false)
		}
		return nw, fmt.Errorf("orderly: %w", err)
	}
	queues := map[string]int{}
	for _, w := range n.workers {
		queues[w.Queue] = w.Shards
	}
	nw.members = m
	nw.service = cluster.NewService(cluster.ServiceConfig{
		Members: m, Self: n.cfg.Name, Queues: queues, Assign: n.assign, Ping: n.store.Ping,
		LeaseTTL: n.cfg.LeaseTTL, Clock: n.clock, Logger: n.log,
	})
	return nw, nil
}

// startRemote serves the node's actors at addr. protoactor's remote panics
// when it cannot listen, so the address is checked first.
func (n *Node) startRemote(sys *actor.ActorSystem, addr string) (r *remote.Remote, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor address %q: bad port", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor address %s: %w", addr, err)
	}
	if port == 0 {
		port = ln.Addr().(*net.TCPAddr).Port
	}
	ln.Close()
	defer func() {
		if v := recover(); v != nil {
			r, err = nil, fmt.Errorf("orderly: start actor remote on %s: %v", addr, v)
		}
	}()
	guard := remoteguard.New(remoteguard.Config{Token: n.cfg.ActorToken, Targets: []string{EnqueueActorName}, Local: sys.Address, Logger: n.log})
	serverOpts := guard.ServerOptions()
	opts := []remote.ConfigOption{
		remote.WithEndpointWriterQueueSize(remoteQueueSize), remote.WithEndpointManagerQueueSize(remoteQueueSize),
	}
	if n.cfg.ActorTLS != nil {
		// The remote answers by dialing the sender's own endpoint: both
		// directions use the same mutual TLS configuration.
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(n.cfg.ActorTLS)))
		opts = append(opts, remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(n.cfg.ActorTLS))))
	}
	opts = append(opts, remote.WithServerOptions(serverOpts...))
	if n.cfg.ActorAdvertise != "" {
		opts = append(opts, remote.WithAdvertisedHost(n.cfg.ActorAdvertise))
	}
	r = remote.NewRemote(sys, remote.Configure(host, port, opts...))
	r.Start()
	n.log.Info("actor remote listening", "actor_addr", addr, "advertised", sys.Address(), "token", n.cfg.ActorToken != "")
	return r, nil
}

// Members returns the cluster's members as this node sees them, itself
// included, by name; a node without a cluster is a member alone.
func (n *Node) Members() []Member {
	n.mu.Lock()
	m, sys := n.members, n.sys
	n.mu.Unlock()
	if m == nil {
		self := Member{Name: n.cfg.Name, State: MemberAlive, Queues: n.Queues(), Version: Version}
		if n.cfg.ActorAddr != "" && sys != nil {
			self.Actor = sys.Address()
		}
		return []Member{self}
	}
	var out []Member
	for _, c := range m.Members() {
		out = append(out, Member{
			Name: c.Name, Addr: c.Addr, State: MemberState(c.State), HTTP: c.Meta.HTTP, Actor: c.Meta.Actor,
			Version: c.Meta.Version, Queues: c.Meta.Queues, Unhealthy: c.Meta.Unhealthy, Since: c.Since,
		})
	}
	return out
}

// membersMessage answers the enqueue actor's MembersRequest.
func (n *Node) membersMessage() *messages.MembersResponse {
	out := &messages.MembersResponse{Self: n.cfg.Name}
	for _, m := range n.Members() {
		out.Members = append(out.Members, &messages.Member{
			Name: m.Name, State: string(m.State), Http: m.HTTP, Actor: m.Actor, Queues: m.Queues, Version: m.Version,
		})
	}
	return out
}

// ActorCredentials returns the gRPC per-call credentials that present token
// to a node's actor remote (Config.ActorToken). A client passes them to its
// own protoactor remote:
//
//	remote.Configure(host, port, remote.WithDialOptions(
//		grpc.WithTransportCredentials(insecure.NewCredentials()),
//		grpc.WithPerRPCCredentials(orderly.ActorCredentials(token))))
//
// The token is sent as is: beyond a trusted network, run the actor remote
// through a tunnel or a private network.
func ActorCredentials(token string) credentials.PerRPCCredentials {
	return remoteguard.Credentials(token)
}

// LoadActorTLS reads a PEM certificate, its key and a PEM bundle of CA
// certificates into a mutual TLS configuration for the actor remote
// (Config.ActorTLS): the node presents the certificate, accepts only
// clients whose certificate the CAs signed, and checks the certificates of
// the processes it dials against the same CAs. A client uses the same
// configuration, with its own certificate, on both directions of its own
// remote (the answer to a request dials the sender back):
//
//	creds := credentials.NewTLS(cfg)
//	remote.Configure(host, port,
//		remote.WithServerOptions(grpc.Creds(creds)),
//		remote.WithDialOptions(grpc.WithTransportCredentials(creds)))
//
// Certificates must name the host (DNS or IP SAN) others dial.
func LoadActorTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor TLS certificate %s, key %s: %w", certFile, keyFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("orderly: actor TLS CA %s: no PEM certificate in it", caFile)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}, nil
}

// storeIDFunc returns how the node learns its store's identity: the
// cluster's StoreID, else the store's own (persistence.Identifier), else
// nil.
func (n *Node) storeIDFunc() func(context.Context) (string, error) {
	if n.cfg.Cluster == nil {
		return nil
	}
	if f := n.cfg.Cluster.StoreID; f != nil {
		return f
	}
	if id, ok := n.store.(persistence.Identifier); ok {
		return id.StoreID
	}
	return nil
}

// storeIDTimeout bounds the first read of the store's identity at Start: a
// store that does not answer is asked again once it is reachable.
const storeIDTimeout = 2 * time.Second

// knownStoreID reads the store's identity before the node joins the
// gossip, so that it advertises it from the start; "" when the store has
// none or does not answer (identify retries).
func (n *Node) knownStoreID(ctx context.Context) string {
	f := n.storeIDFunc()
	if f == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, storeIDTimeout)
	defer cancel()
	id, err := f(ctx)
	if err != nil {
		n.log.Warn("cannot read the store's identity yet; retrying once it is reachable", "err", err)
		return ""
	}
	return id
}

// identify advertises the store's identity if Start could not read it,
// retrying until ctx ends; called by bootstrap, once the store answered,
// before the cluster service places shards.
func (n *Node) identify(ctx context.Context, members *cluster.Membership, wait func() bool) {
	f := n.storeIDFunc()
	if f == nil || members == nil {
		return
	}
	for _, m := range members.Members() {
		if m.Name == n.cfg.Name && m.Meta.Store != "" {
			return
		}
	}
	for {
		id, err := f(ctx)
		if err == nil {
			if err := members.SetMeta(ctx, func(m *cluster.Meta) { m.Store = id }); err != nil {
				n.log.Warn("cannot advertise the store's identity", "err", err)
			}
			return
		}
		n.log.Warn("cannot read the store's identity yet; retrying", "err", err)
		if !wait() {
			return
		}
	}
}
