//go:build chaos

package chaos

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/hooks"
	"github.com/orderlyhq/orderly/internal/logbridge"
	"github.com/orderlyhq/orderly/persistence"
)

// errRelayHeld is the relay's error while HoldRelayEnv is set.
var errRelayHeld = errors.New("chaos: outbox relay held")

// WrapStore returns s with its outbox relay failing when HoldRelayEnv is
// "1", otherwise s.
func WrapStore(s persistence.Store, log *slog.Logger) persistence.Store {
	if os.Getenv(HoldRelayEnv) != "1" {
		return s
	}
	log.Warn("chaos build: this node never relays outboxes", "env", HoldRelayEnv)
	if rs, ok := s.(persistence.Resharder); ok {
		return heldRelayResharder{heldRelay: heldRelay{Store: s}, Resharder: rs}
	}
	return heldRelay{Store: s}
}

// heldRelayResharder is heldRelay on a store that reshards.
type heldRelayResharder struct {
	heldRelay
	persistence.Resharder
}

// heldRelay is a store whose outbox relay always fails, leaving the
// entries for the next owner.
type heldRelay struct{ persistence.Store }

func (heldRelay) RelayOutbox(context.Context, persistence.ShardRef, int) (int, int, bool, error) {
	return 0, 0, true, errRelayHeld
}

// Enabled reports whether this binary has the fault seams.
const Enabled = true

// Install gives the node a gossip transport that SIGUSR1 cuts off and
// SIGUSR2 restores, and the resolver of HostsEnv when it is set; stop ends
// the signal handling.
func Install(cfg *orderly.ClusterConfig, log *slog.Logger) (stop func(), err error) {
	if cfg == nil {
		return func() {}, nil
	}
	if path := os.Getenv(HostsEnv); path != "" {
		hooks.ClusterResolver.(func(*orderly.ClusterConfig, cluster.Resolver))(cfg, hostsFile(path))
		log.Warn("chaos build: join seeds are looked up in a hosts file, not in DNS", "env", HostsEnv, "file", path)
	}
	host, p, err := net.SplitHostPort(cfg.Bind)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, err
	}
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{host}, BindPort: port, Logger: logbridge.Memberlist(log),
	})
	if err != nil {
		return nil, err
	}
	t := &transport{NetTransport: nt, packets: make(chan *memberlist.Packet), streams: make(chan net.Conn), done: make(chan struct{})}
	t.wg.Add(2)
	go t.forwardPackets()
	go t.forwardStreams()
	hooks.ClusterTransport.(func(*orderly.ClusterConfig, memberlist.Transport))(cfg, t)

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-quit:
				return
			case s := <-sigs:
				cut := s == syscall.SIGUSR1
				t.cut.Store(cut)
				log.Warn("chaos: gossip partition", "cut", cut)
			}
		}
	}()
	log.Warn("chaos build: SIGUSR1 cuts this node's gossip off, SIGUSR2 restores it")
	return func() {
		signal.Stop(sigs)
		close(quit)
		wg.Wait()
	}, nil
}

// transport drops everything while cut.
type transport struct {
	*memberlist.NetTransport
	cut     atomic.Bool
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup // the forwarders
}

var errCut = errors.New("chaos: gossip cut off")

func (t *transport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.cut.Load() {
		return time.Now(), nil
	}
	return t.NetTransport.WriteTo(b, addr)
}

func (t *transport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if t.cut.Load() {
		return time.Now(), nil
	}
	return t.NetTransport.WriteToAddress(b, a)
}

func (t *transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.cut.Load() {
		return nil, errCut
	}
	return t.NetTransport.DialTimeout(addr, timeout)
}

func (t *transport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if t.cut.Load() {
		return nil, errCut
	}
	return t.NetTransport.DialAddressTimeout(a, timeout)
}

func (t *transport) PacketCh() <-chan *memberlist.Packet { return t.packets }
func (t *transport) StreamCh() <-chan net.Conn           { return t.streams }

func (t *transport) forwardPackets() {
	defer t.wg.Done()
	in := t.NetTransport.PacketCh()
	for {
		select {
		case <-t.done:
			return
		case p := <-in:
			if t.cut.Load() {
				continue
			}
			select {
			case t.packets <- p:
			case <-t.done:
				return
			}
		}
	}
}

func (t *transport) forwardStreams() {
	defer t.wg.Done()
	in := t.NetTransport.StreamCh()
	for {
		select {
		case <-t.done:
			return
		case c := <-in:
			if t.cut.Load() {
				c.Close()
				continue
			}
			select {
			case t.streams <- c:
			case <-t.done:
				c.Close()
				return
			}
		}
	}
}

func (t *transport) Shutdown() error {
	err := t.NetTransport.Shutdown()
	t.once.Do(func() { close(t.done) })
	t.wg.Wait()
	return err
}
