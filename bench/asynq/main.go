// Command asynq runs Lowkiq's benchmark on asynq (github.com/hibiken/asynq),
// so that Orderly can be measured beside it on the same machine and the same
// Redis: enqueue N blank tasks one by one, then process them with a noop
// handler at concurrency 5, and report jobs/s and the CPU per job of this
// process and of Redis together. It is a module of its own, so that Orderly
// does not depend on asynq; side-by-side.sh runs both in turn.
//
//	go run . --redis 127.0.0.1:6380 --jobs 100000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// result is one run, in the field names of `orderly bench --json`.
type result struct {
	Scenario        string  `json:"scenario"`
	Jobs            int     `json:"jobs"`
	Concurrency     int     `json:"concurrency"`
	EnqueuePerSec   float64 `json:"enqueue_jobs_per_sec"`
	ProcessPerSec   float64 `json:"process_jobs_per_sec"`
	WallSec         float64 `json:"wall_seconds"`
	CPUSec          float64 `json:"cpu_seconds"`
	RedisCPUSec     float64 `json:"redis_cpu_seconds"`
	CPUPerJobMicros float64 `json:"cpu_per_job_us"`
	RedisCmdsPerJob float64 `json:"redis_commands_per_job"`
}

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis `address` (host:port); its database 15 is flushed")
	jobs := flag.Int("jobs", 100_000, "tasks to enqueue and process")
	concurrency := flag.Int("concurrency", 5, "asynq server concurrency")
	flag.Parse()
	if err := run(*addr, *jobs, *concurrency); err != nil {
		fmt.Fprintln(os.Stderr, "asynq bench:", err)
		os.Exit(1)
	}
}

func run(addr string, n, concurrency int) error {
	ctx := context.Background()
	const db = 15
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	defer rdb.Close()
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		return fmt.Errorf("flush db %d: %w", db, err)
	}
	opt := asynq.RedisClientOpt{Addr: addr, DB: db}
	res := result{Scenario: "asynq", Jobs: n, Concurrency: concurrency}

	c := asynq.NewClient(opt)
	t0 := time.Now()
	for i := range n {
		if _, err := c.EnqueueContext(ctx, asynq.NewTask("blank", nil), asynq.MaxRetry(25)); err != nil {
			return fmt.Errorf("enqueue %d: %w", i, err)
		}
	}
	res.EnqueuePerSec = float64(n) / time.Since(t0).Seconds()
	c.Close()

	var done atomic.Int64
	finished := make(chan struct{})
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: concurrency, LogLevel: asynq.WarnLevel})
	before, err := usage(ctx, rdb)
	if err != nil {
		return err
	}
	cpu0 := cpuSeconds()
	t1 := time.Now()
	if err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		if done.Add(1) == int64(n) {
			close(finished)
		}
		return nil
	})); err != nil {
		return err
	}
	select {
	case <-finished:
	case <-time.After(10 * time.Minute):
		srv.Shutdown()
		return fmt.Errorf("only %d of %d tasks processed after 10 minutes", done.Load(), n)
	}
	res.WallSec = time.Since(t1).Seconds()
	res.CPUSec = cpuSeconds() - cpu0
	after, err := usage(ctx, rdb)
	if err != nil {
		return err
	}
	srv.Shutdown()
	res.ProcessPerSec = float64(n) / res.WallSec
	res.RedisCPUSec = after.cpu - before.cpu
	res.RedisCmdsPerJob = float64(after.cmds-before.cmds) / float64(n)
	res.CPUPerJobMicros = (res.CPUSec + res.RedisCPUSec) / float64(n) * 1e6
	rdb.FlushDB(ctx)
	return json.NewEncoder(os.Stdout).Encode(res)
}

type redisUsage struct {
	cpu  float64
	cmds int64
}

// usage reads Redis's CPU seconds and processed commands (INFO).
func usage(ctx context.Context, rdb *redis.Client) (redisUsage, error) {
	info, err := rdb.Info(ctx, "cpu", "stats").Result()
	if err != nil {
		return redisUsage{}, err
	}
	var u redisUsage
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "used_cpu_sys", "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			u.cpu += f
		case "total_commands_processed":
			u.cmds, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return u, nil
}

// cpuSeconds returns this process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
