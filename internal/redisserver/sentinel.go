package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelOptions configure a Sentinel set.
type SentinelOptions struct {
	// MasterName is the name the sentinels monitor ["orderly"].
	MasterName string
	// Replicas is the number of replicas of the master [1].
	Replicas int
	// Sentinels is the number of sentinels [3]; the quorum is a majority.
	Sentinels int
	// DownAfter is how long a master must not answer before a sentinel
	// deems it down [1s].
	DownAfter time.Duration
	// AOF turns on the append-only file (appendfsync always) on the
	// master and the replicas.
	AOF bool
	// Args are extra redis-server arguments for the master and replicas.
	Args []string
}

// SentinelSet is a master, its replicas and the sentinels that watch them,
// all on 127.0.0.1 in temporary directories. After a failover the master
// is whichever data server the sentinels name (Master asks them).
type SentinelSet struct {
	opts      SentinelOptions
	data      []*Server // the first one starts as the master
	sentinels []*Server
}

// StartSentinel starts the master, then the replicas (replicaof the
// master), then the sentinels, and returns once every sentinel sees the
// master and all its replicas.
func StartSentinel(opts SentinelOptions) (*SentinelSet, error) {
	if opts.MasterName == "" {
		opts.MasterName = "orderly"
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.Sentinels <= 0 {
		opts.Sentinels = 3
	}
	if opts.DownAfter <= 0 {
		opts.DownAfter = time.Second
	}
	set := &SentinelSet{opts: opts}
	master, err := Start(Options{AOF: opts.AOF, Args: opts.Args})
	if err != nil {
		return nil, err
	}
	set.data = append(set.data, master)
	for range opts.Replicas {
		args := append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(master.port)}, opts.Args...)
		r, err := Start(Options{AOF: opts.AOF, Args: args})
		if err != nil {
			set.Close()
			return nil, err
		}
		set.data = append(set.data, r)
	}
	for range opts.Sentinels {
		s, err := set.startSentinel(master.port)
		if err != nil {
			set.Close()
			return nil, err
		}
		set.sentinels = append(set.sentinels, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := set.waitReady(ctx); err != nil {
		set.Close()
		return nil, err
	}
	return set, nil
}

func (set *SentinelSet) startSentinel(masterPort int) (*Server, error) {
	bin := Binary()
	if bin == "" {
		return nil, ErrNoBinary
	}
	dir, err := os.MkdirTemp("", "orderly-redis-sentinel-")
	if err != nil {
		return nil, fmt.Errorf("redisserver: temp dir: %w", err)
	}
	quorum := set.opts.Sentinels/2 + 1
	name := set.opts.MasterName
	conf := filepath.Join(dir, "sentinel.conf")
	text := strings.Join([]string{
		"bind 127.0.0.1",
		"protected-mode no",
		"daemonize no",
		"dir " + dir,
		"logfile " + filepath.Join(dir, "redis.log"),
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", name, masterPort, quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", name, set.opts.DownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", name, 3*set.opts.DownAfter.Milliseconds()+2000),
		fmt.Sprintf("sentinel parallel-syncs %s 1", name),
		"",
	}, "\n")
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redisserver: sentinel config: %w", err)
	}
	s := &Server{bin: bin, dir: dir, conf: conf}
	var lastErr error
	for range 5 {
		port, err := FreePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.port = port
		if lastErr = s.launch(); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("redisserver: start sentinel: %w", lastErr)
}

// waitReady waits until every sentinel knows the replicas and the other
// sentinels, so that a failover can be agreed on.
func (set *SentinelSet) waitReady(ctx context.Context) error {
	for _, s := range set.sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		for {
			m, err := c.Master(ctx, set.opts.MasterName).Result()
			if err == nil && m["num-slaves"] == strconv.Itoa(set.opts.Replicas) &&
				m["num-other-sentinels"] == strconv.Itoa(len(set.sentinels)-1) {
				replicas, err := c.Replicas(ctx, set.opts.MasterName).Result()
				if err == nil && allUp(replicas) {
					break
				}
			}
			select {
			case <-ctx.Done():
				c.Close()
				return fmt.Errorf("redisserver: sentinel %s not ready: %v (master: %v)", s.Addr(), ctx.Err(), m)
			case <-time.After(100 * time.Millisecond):
			}
		}
		c.Close()
	}
	return nil
}

func allUp(replicas []map[string]string) bool {
	for _, r := range replicas {
		if strings.Contains(r["flags"], "down") || strings.Contains(r["flags"], "disconnected") || r["master-link-status"] != "ok" {
			return false
		}
	}
	return true
}

// MasterName returns the name the sentinels monitor.
func (set *SentinelSet) MasterName() string { return set.opts.MasterName }

// SentinelAddrs returns host:port of every sentinel.
func (set *SentinelSet) SentinelAddrs() []string {
	out := make([]string, len(set.sentinels))
	for i, s := range set.sentinels {
		out[i] = s.Addr()
	}
	return out
}

// URL returns the redis+sentinel:// URL of the set.
func (set *SentinelSet) URL() string {
	return "redis+sentinel://" + strings.Join(set.SentinelAddrs(), ",") + "/" + set.opts.MasterName
}

// Servers returns the master and the replicas, the first one being the
// master the set started with.
func (set *SentinelSet) Servers() []*Server { return set.data }

// Master returns the data server the sentinels currently name as master
// (asking each sentinel in turn until one answers).
func (set *SentinelSet) Master(ctx context.Context) (*Server, error) {
	var lastErr error
	for _, s := range set.sentinels {
		if s.Pid() == 0 {
			continue
		}
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		addr, err := c.GetMasterAddrByName(ctx, set.opts.MasterName).Result()
		c.Close()
		if err != nil {
			lastErr = err
			continue
		}
		hp := net.JoinHostPort(addr[0], addr[1])
		for _, d := range set.data {
			if d.Addr() == hp {
				return d, nil
			}
		}
		return nil, fmt.Errorf("redisserver: sentinels name an unknown master %s", hp)
	}
	if lastErr == nil {
		lastErr = errors.New("no sentinel is running")
	}
	return nil, fmt.Errorf("redisserver: ask sentinels for the master: %w", lastErr)
}

// WaitFailover waits until the sentinels name a master other than old and
// that master answers as a master; it returns the new master.
func (set *SentinelSet) WaitFailover(ctx context.Context, old *Server) (*Server, error) {
	for {
		m, err := set.Master(ctx)
		if err == nil && m != old {
			c := redis.NewClient(&redis.Options{Addr: m.Addr()})
			role, rerr := c.Do(ctx, "ROLE").Slice()
			c.Close()
			if rerr == nil && len(role) > 0 && role[0] == "master" {
				return m, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("redisserver: no failover away from %s: %w", old.Addr(), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close kills every process and removes their directories.
func (set *SentinelSet) Close() {
	for _, s := range set.sentinels {
		s.Close()
	}
	for _, s := range set.data {
		s.Close()
	}
}
