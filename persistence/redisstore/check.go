package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ServerInfo is what CheckServer learned about the server.
type ServerInfo struct {
	Version         string
	MaxmemoryPolicy string
	AOF             bool
	RDBSaves        bool
	// Warnings are conditions that do not stop a node but lose data on a
	// Redis restart (persistence off).
	Warnings []string
}

// CheckServer checks that the server can hold Orderly's data: version >= 6.2
// and maxmemory-policy noeviction (unless allowEviction). It warns when
// neither AOF nor RDB snapshots are on. A server that forbids CONFIG GET
// (managed Redis) is accepted with a warning. On a Redis Cluster every
// master is checked (docs/contract.md §4): the first failing master's error
// is returned, naming it; Version is the oldest master's, AOF and RDBSaves
// hold only when they hold on every master, and a warning names its master.
func CheckServer(ctx context.Context, rdb redis.UniversalClient, allowEviction bool) (ServerInfo, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return checkServer(ctx, rdb, allowEviction)
	}
	var (
		mu    sync.Mutex
		out   ServerInfo
		first = true
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		info, err := checkServer(ctx, m, allowEviction)
		if err != nil {
			return fmt.Errorf("master %s: %w", m.Options().Addr, err)
		}
		mu.Lock()
		defer mu.Unlock()
		ma, mi := versionParts(out.Version)
		if first || !versionAtLeast(info.Version, ma, mi) {
			out.Version = info.Version
		}
		if first {
			out.MaxmemoryPolicy, out.AOF, out.RDBSaves = info.MaxmemoryPolicy, info.AOF, info.RDBSaves
		}
		first = false
		out.AOF = out.AOF && info.AOF
		out.RDBSaves = out.RDBSaves && info.RDBSaves
		for _, w := range info.Warnings {
			out.Warnings = append(out.Warnings, "master "+m.Options().Addr+": "+w)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	if first {
		return out, errors.New("redisstore: check server: the Cluster has no reachable master")
	}
	return out, nil
}

// versionParts returns the major and minor version of v (0, 0 when v is not
// a version).
func versionParts(v string) (int, int) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0
	}
	ma, _ := strconv.Atoi(parts[0])
	mi, _ := strconv.Atoi(parts[1])
	return ma, mi
}

func checkServer(ctx context.Context, rdb redis.Cmdable, allowEviction bool) (ServerInfo, error) {
	var info ServerInfo
	raw, err := rdb.Info(ctx, "server", "persistence").Result()
	if err != nil {
		return info, fmt.Errorf("redisstore: check server: %w", err)
	}
	fields := parseInfo(raw)
	info.Version = fields["redis_version"]
	if !versionAtLeast(info.Version, 6, 2) {
		return info, fmt.Errorf("%w (server is %q)", ErrServerTooOld, info.Version)
	}
	info.AOF = fields["aof_enabled"] == "1"

	cfg, err := rdb.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		info.Warnings = append(info.Warnings, "cannot read maxmemory-policy (CONFIG GET refused); make sure it is noeviction")
	} else {
		info.MaxmemoryPolicy = cfg["maxmemory-policy"]
		if info.MaxmemoryPolicy != "noeviction" && !allowEviction {
			return info, fmt.Errorf("%w (server has %q); set it, or allow eviction explicitly", ErrEvictionPolicy, info.MaxmemoryPolicy)
		}
		if info.MaxmemoryPolicy != "noeviction" {
			info.Warnings = append(info.Warnings, "maxmemory-policy is "+info.MaxmemoryPolicy+": Redis may evict jobs under memory pressure")
		}
	}
	if save, err := rdb.ConfigGet(ctx, "save").Result(); err == nil {
		info.RDBSaves = strings.TrimSpace(save["save"]) != ""
	}
	if !info.AOF && !info.RDBSaves {
		info.Warnings = append(info.Warnings, "Redis persistence is off (no AOF, no RDB snapshots): queued jobs do not survive a Redis restart")
	}
	return info, nil
}

func parseInfo(raw string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(raw, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			out[k] = v
		}
	}
	return out
}

func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
