package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/internal/clock"
)

// SRVPrefix starts a join seed that names DNS SRV records rather than one
// address: "dns+srv:_gossip._tcp.orderly.ns.svc.cluster.local" stands for
// every target and port those records give, looked up again at every
// re-join. A plain host:port seed whose host is a name is looked up again
// too, every address it resolves to being a seed with that port (a
// Kubernetes headless Service: one A record per pod).
const SRVPrefix = "dns+srv:"

// DefaultAloneRejoinInterval is how often a node that sees no other member
// looks its seeds up again and joins what they name (after backing off from
// 100 ms): nodes started together, or a first node whose peers appear in
// DNS later, meet within about this time.
const DefaultAloneRejoinInterval = 2 * time.Second

// resolveTimeout bounds one lookup of the seeds.
const resolveTimeout = 5 * time.Second

// Resolver looks up the names of join seeds; *net.Resolver is one (the
// default is net.DefaultResolver). Tests inject another.
type Resolver interface {
	// LookupHost returns the addresses of host.
	LookupHost(ctx context.Context, host string) ([]string, error)
	// LookupSRV returns the SRV records of name when service and proto
	// are empty, as net.Resolver does.
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
}

// CheckSeed reports whether s is a join seed: host:port (host a name or an
// IP address) or SRVPrefix and a DNS name.
func CheckSeed(s string) error {
	if name, ok := strings.CutPrefix(s, SRVPrefix); ok {
		if name == "" || strings.ContainsAny(name, " \t\r\n:/") {
			return fmt.Errorf("%q: %s must be followed by a DNS name", s, SRVPrefix)
		}
		return nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port or %sname: %w", s, SRVPrefix, err)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return fmt.Errorf("%q: bad port %q", s, port)
	}
	return nil
}

// resolveSeeds returns the gossip addresses (ip:port) the seeds name now,
// each once, in the seeds' order. A seed without a port takes defPort (as
// memberlist does). A name that resolves to nothing adds nothing; the
// lookup errors are returned joined, beside what did resolve.
func resolveSeeds(ctx context.Context, r Resolver, seeds []string, defPort int) ([]string, error) {
	var out []string
	var errs []error
	seen := map[string]bool{}
	add := func(host string, port int) {
		ips, err := lookupHost(ctx, r, host)
		if err != nil {
			errs = append(errs, err)
		}
		for _, ip := range ips {
			a := net.JoinHostPort(ip, strconv.Itoa(port))
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	for _, s := range seeds {
		if name, ok := strings.CutPrefix(s, SRVPrefix); ok {
			_, srvs, err := r.LookupSRV(ctx, "", "", name)
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster: SRV records of %s: %w", name, err))
			}
			for _, srv := range srvs {
				add(strings.TrimSuffix(srv.Target, "."), int(srv.Port))
			}
			continue
		}
		host, port := s, defPort
		if h, p, err := net.SplitHostPort(s); err == nil {
			n, err := strconv.Atoi(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster: seed %q: bad port", s))
				continue
			}
			host, port = h, n
		}
		add(strings.Trim(host, "[]"), port)
	}
	return out, errors.Join(errs...)
}

// lookupHost returns host itself when it is an IP address, else its
// addresses.
func lookupHost(ctx context.Context, r Resolver, host string) ([]string, error) {
	if net.ParseIP(host) != nil {
		return []string{host}, nil
	}
	ips, err := r.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("cluster: addresses of %s: %w", host, err)
	}
	return ips, nil
}

// resolve looks the seeds up, within resolveTimeout.
func (m *Membership) resolve(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	_, port, err := splitHostPort(cmp.Or(m.cfg.Advertise, m.cfg.Bind))
	if err != nil {
		port = 0
	}
	return resolveSeeds(ctx, m.cfg.Resolver, m.cfg.Join, port)
}

// missingSeeds returns the addresses the seeds name now that are neither
// this node nor a live member.
func (m *Membership) missingSeeds(ctx context.Context) ([]string, error) {
	addrs, err := m.resolve(ctx)
	live := map[string]bool{}
	m.mu.Lock()
	live[m.localAddr] = true
	for _, mem := range m.members {
		live[mem.Addr] = true
	}
	m.mu.Unlock()
	var out []string
	for _, a := range addrs {
		if !live[a] {
			out = append(out, a)
		}
	}
	return out, err
}

// alone reports whether this node sees no other live member.
func (m *Membership) alone() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.members {
		if name != m.cfg.Name {
			return false
		}
	}
	return true
}

// rejoin looks the seeds up and joins every address they name that is not
// a member yet, until ctx ends (Shutdown): every RejoinInterval while this
// node sees other members, and quickly (from 100 ms, doubling up to
// DefaultAloneRejoinInterval) while it is alone, so that nodes started
// together, or whose names appear in DNS one after the other, meet at once.
func (m *Membership) rejoin(ctx context.Context) {
	defer m.wg.Done()
	fast := 100 * time.Millisecond
	aloneMax := min(DefaultAloneRejoinInterval, m.cfg.RejoinInterval)
	for {
		wait := m.cfg.RejoinInterval
		if m.alone() {
			wait = min(fast, aloneMax)
			fast = min(2*fast, aloneMax)
		} else {
			fast = 100 * time.Millisecond
		}
		after, stop := clock.After(m.cfg.Clock, wait)
		select {
		case <-ctx.Done():
			stop()
			return
		case <-after:
		}
		missing, err := m.missingSeeds(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			m.log.Debug("seed lookup", "join", m.cfg.Join, "err", err)
		}
		if len(missing) == 0 {
			continue
		}
		n, err := m.ml.Join(missing)
		if n > 0 {
			m.log.Info("joined seeds", "seeds", missing, "contacted", n)
		} else {
			m.log.Debug("seeds still unreachable", "seeds", missing, "err", err)
		}
	}
}
