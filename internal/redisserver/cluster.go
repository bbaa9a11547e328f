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
	// Args are extra redis-server arguments for every node.
	Args []string
}

// Cluster is a Redis Cluster of redis-server processes on 127.0.0.1, each a
// master serving a share of the 16384 slots.
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
	for range opts.Masters {
		s, err := startClusterNode(opts.Args)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.servers = append(c.servers, s)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redisserver: redis-cli --cluster create: %v: %s", err, lastLines(string(out), 5))
	}
	if err := c.waitOK(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// startClusterNode starts one cluster-enabled server, retrying ports until
// both the client port and the bus port are free.
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
	for range 20 {
		port := 20000 + rand.IntN(35000)
		if !portFree(port) || !portFree(port+10000) {
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

func (c *Cluster) waitOK(ctx context.Context) error {
	for _, s := range c.servers {
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

// Addrs returns host:port of every master.
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
