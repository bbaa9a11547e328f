package redisserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnvCLI names the environment variable that points at a redis-cli binary
// other than the one on PATH.
const EnvCLI = "ORDERLY_REDIS_CLI"

// ErrNoCLI is returned when no redis-cli binary is found (it creates
// clusters).
var ErrNoCLI = errors.New("redisserver: no redis-cli binary found (Debian: apt-get install redis-tools)")

// CLI returns the redis-cli binary to use, or "" when there is none.
func CLI() string {
	if b := os.Getenv(EnvCLI); b != "" {
		return b
	}
	b, err := exec.LookPath("redis-cli")
	if err != nil {
		return ""
	}
	return b
}

// ClusterOptions configure a Redis Cluster.
type ClusterOptions struct {
	// Masters is the number of masters [3].
	Masters int
	// Replicas is the number of replicas of each master [0]; a replica
	// takes over when its master fails.
	Replicas int
	// Args are extra redis-server arguments for every node.
	Args []string
}

// Cluster is a Redis Cluster of redis-server processes on 127.0.0.1: masters
// serving a share of the 16384 slots each, and their replicas, if any.
type Cluster struct {
	servers []*Server
}

// StartCluster starts the masters (each on a free port whose cluster bus
// port, +10000, is free too) and joins them with
// `redis-cli --cluster create`. It returns once every node reports
// cluster_state:ok.
func StartCluster(opts ClusterOptions) (*Cluster, error) {
	cli := CLI()
	if cli == "" {
		return nil, ErrNoCLI
	}
	if opts.Masters <= 0 {
		opts.Masters = 3
	}
	c := &Cluster{}
	for range opts.Masters * (1 + max(opts.Replicas, 0)) {
		s, err := startClusterNode(opts.Args)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.servers = append(c.servers, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if opts.Masters == 1 && opts.Replicas <= 0 {
		// redis-cli creates clusters of 3 masters or more: one master
		// takes every slot itself.
		rdb := redis.NewClient(&redis.Options{Addr: c.servers[0].Addr()})
		err := rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err()
		rdb.Close()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("redisserver: CLUSTER ADDSLOTSRANGE: %w", err)
		}
	} else {
		args := []string{"--cluster", "create"}
		args = append(args, c.Addrs()...)
		args = append(args, "--cluster-replicas", strconv.Itoa(max(opts.Replicas, 0)), "--cluster-yes")
		if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
			c.Close()
			return nil, fmt.Errorf("redisserver: redis-cli --cluster create: %v: %s", err, lastLines(string(out), 5))
		}
	}
	if err := c.WaitOK(ctx); err != nil {
		c.Close()
		return nil, err
	}
	// The roles spread by gossip: wait until the nodes agree on them.
	for {
		ms, err := c.Masters(ctx)
		if err == nil && len(ms) == opts.Masters {
			return c, nil
		}
		select {
		case <-ctx.Done():
			c.Close()
			return nil, fmt.Errorf("redisserver: cluster roles not settled: %v (%d masters)", ctx.Err(), len(ms))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Masters returns the servers that are masters now (after a failover, the
// promoted replicas), asking the first running node.
func (c *Cluster) Masters(ctx context.Context) ([]*Server, error) {
	var lastErr error
	for _, s := range c.servers {
		if s.Pid() == 0 {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
		nodes, err := rdb.ClusterNodes(ctx).Result()
		rdb.Close()
		if err != nil {
			lastErr = err
			continue
		}
		var out []*Server
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			_, port, _ := strings.Cut(addr, ":") // a lone node does not know its own IP
			for _, srv := range c.servers {
				if strconv.Itoa(srv.port) == port {
					out = append(out, srv)
				}
			}
		}
		return out, nil
	}
	if lastErr == nil {
		lastErr = errors.New("no node is running")
	}
	return nil, fmt.Errorf("redisserver: cluster masters: %w", lastErr)
}

// startClusterNode starts one cluster-enabled server, retrying ports until
// both the client port and the bus port are free and neither was handed out
// in this process (FreePort: a node between a kill and its restart does
// not hold its port).
func startClusterNode(extra []string) (*Server, error) {
	bin := Binary()
	if bin == "" {
		return nil, ErrNoBinary
	}
	dir, err := os.MkdirTemp("", "orderly-redis-cluster-")
	if err != nil {
		return nil, fmt.Errorf("redisserver: temp dir: %w", err)
	}
	s := &Server{bin: bin, dir: dir, opts: Options{Args: append([]string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "2000",
	}, extra...)}}
	var lastErr error
	lo, hi := staticPorts()
	for range 20 {
		// Both ports below the ephemeral range (FreePort): the bus port
		// is the client port + 10000.
		port := lo + rand.IntN(max(hi-10000-lo, 1))
		if !portFree(port) || !portFree(port+10000) || !handedOut.claim(port) || !handedOut.claim(port+10000) {
			continue
		}
		s.port = port
		if lastErr = s.launch(); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	if lastErr == nil {
		lastErr = errors.New("no free port pair found")
	}
	return nil, fmt.Errorf("redisserver: start cluster node: %w", lastErr)
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// WaitOK waits until every running node reports cluster_state:ok (after a
// failover: once a replica took over the failed master's slots).
func (c *Cluster) WaitOK(ctx context.Context) error {
	for _, s := range c.servers {
		if s.Pid() == 0 {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
		for {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			select {
			case <-ctx.Done():
				rdb.Close()
				return fmt.Errorf("redisserver: cluster node %s not ok: %v %s", s.Addr(), ctx.Err(), info)
			case <-time.After(50 * time.Millisecond):
			}
		}
		rdb.Close()
	}
	return nil
}

// Addrs returns host:port of every node (of every master, without
// replicas).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.Addr()
	}
	return out
}

// Servers returns the cluster's processes.
func (c *Cluster) Servers() []*Server { return c.servers }

// Close kills every node and removes their directories.
func (c *Cluster) Close() {
	for _, s := range c.servers {
		s.Close()
	}
}
