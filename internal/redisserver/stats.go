package redisserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Usage is what a Redis server reports about the work it did.
type Usage struct {
	// Commands sums the calls of INFO commandstats, which counts the
	// commands run inside scripts too (INFO itself excluded).
	Commands int64
	// CPUSeconds is used_cpu_user + used_cpu_sys.
	CPUSeconds float64
	// ScriptMicros is the time spent in script calls (EVAL, EVALSHA and
	// their read-only forms), commands inside them included.
	ScriptMicros int64
	// MemoryBytes is used_memory (not a counter: Sub keeps the later one's).
	MemoryBytes int64
}

// Sub returns u - o.
func (u Usage) Sub(o Usage) Usage {
	return Usage{Commands: u.Commands - o.Commands, CPUSeconds: u.CPUSeconds - o.CPUSeconds,
		ScriptMicros: u.ScriptMicros - o.ScriptMicros, MemoryBytes: u.MemoryBytes}
}

// ReadUsage reads the server's command counts and CPU time; on a Redis
// Cluster, the sums over its masters (MemoryBytes too).
func ReadUsage(ctx context.Context, c redis.UniversalClient) (Usage, error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return readUsage(ctx, c)
	}
	var mu sync.Mutex
	var sum Usage
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		u, err := readUsage(ctx, m)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		sum.Commands += u.Commands
		sum.CPUSeconds += u.CPUSeconds
		sum.ScriptMicros += u.ScriptMicros
		sum.MemoryBytes += u.MemoryBytes
		return nil
	})
	return sum, err
}

func readUsage(ctx context.Context, c redis.Cmdable) (Usage, error) {
	raw, err := c.Info(ctx, "commandstats", "cpu", "memory").Result()
	if err != nil {
		return Usage{}, fmt.Errorf("redisserver: INFO: %w", err)
	}
	var u Usage
	for _, line := range strings.Split(raw, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(name, "cmdstat_") && name != "cmdstat_info":
			calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			u.Commands += n
			switch name {
			case "cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro":
				for _, kv := range strings.Split(rest, ",") {
					if v, ok := strings.CutPrefix(kv, "usec="); ok {
						us, _ := strconv.ParseInt(v, 10, 64)
						u.ScriptMicros += us
					}
				}
			}
		case name == "used_memory":
			u.MemoryBytes, _ = strconv.ParseInt(rest, 10, 64)
		case name == "used_cpu_user" || name == "used_cpu_sys":
			f, _ := strconv.ParseFloat(rest, 64)
			u.CPUSeconds += f
		}
	}
	return u, nil
}
