package redisserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Usage is what a Redis server reports about the work it did.
type Usage struct {
	// Commands sums the calls of INFO commandstats, which counts the
	// commands run inside scripts too (INFO itself excluded).
	Commands int64
	// CPUSeconds is used_cpu_user + used_cpu_sys.
	CPUSeconds float64
}

// Sub returns u - o.
func (u Usage) Sub(o Usage) Usage {
	return Usage{Commands: u.Commands - o.Commands, CPUSeconds: u.CPUSeconds - o.CPUSeconds}
}

// ReadUsage reads the server's command counts and CPU time.
func ReadUsage(ctx context.Context, c redis.UniversalClient) (Usage, error) {
	raw, err := c.Info(ctx, "commandstats", "cpu").Result()
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
		case name == "used_cpu_user" || name == "used_cpu_sys":
			f, _ := strconv.ParseFloat(rest, 64)
			u.CPUSeconds += f
		}
	}
	return u, nil
}
