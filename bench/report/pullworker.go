package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// pullWorker is the Go pull worker of the pull runs (client.PullWorker),
// in a process of its own so that its CPU is measured apart; the Python
// and TypeScript workers (pull_worker.py, pull_worker.mjs) speak the same
// protocol on stdin and stdout: "ready" once started, then it pulls from
// the first line on stdin (the gate), prints "handled" once its handler
// has seen --expect jobs (when set), stops gracefully at the second line
// or EOF, and prints its summary, {"jobs": n, "leases": m}. Its handler
// acknowledges every id of a lease.
func pullWorker(args []string) error {
	fs := flag.NewFlagSet("pull-worker", flag.ContinueOnError)
	url := fs.String("url", "", "the node's HTTP API")
	queue := fs.String("queue", "bench", "the pull queue")
	token := fs.String("token", "", "bearer token")
	concurrency := fs.Int("concurrency", 8, "leases held at once")
	maxIDs := fs.Int("max-ids", 1, "the most ids of a lease")
	wait := fs.Duration("wait", 5*time.Second, "long-poll bound of a pull")
	expect := fs.Int64("expect", 0, `print "handled" once this many jobs were handled (0: never)`)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run (gate to stop) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		return errors.New("--url is required")
	}
	var jobs, leases atomic.Int64
	w := &client.PullWorker{URL: *url, Queue: *queue, Token: *token, MaxIDs: *maxIDs, Wait: *wait, Concurrency: *concurrency,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *concurrency + 1}},
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Handle: func(_ context.Context, js []wire.Job) (*wire.Answer, error) {
			leases.Add(1)
			n := int64(len(js))
			if got := jobs.Add(n); *expect > 0 && got >= *expect && got-n < *expect {
				fmt.Println("handled")
			}
			return nil, nil
		}}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the gate: %w", err)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }() // ends after stop
	if _, err := in.ReadString('\n'); err != nil && !errors.Is(err, io.EOF) {
		stop()
		<-done
		return fmt.Errorf("waiting for the stop line: %w", err)
	}
	stop()
	if err := <-done; err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(workerSummary{Jobs: jobs.Load(), Leases: leases.Load()})
}

// workerSummary is the last line of a pull worker of the report.
type workerSummary struct {
	Jobs   int64 `json:"jobs"`
	Leases int64 `json:"leases"`
}

// parseSummary reads a pull worker's last line.
func parseSummary(line string) (workerSummary, error) {
	var s workerSummary
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		return s, fmt.Errorf("pull worker summary %q: %w", line, err)
	}
	if s.Leases <= 0 || s.Jobs < s.Leases {
		return s, fmt.Errorf("pull worker summary %q: no lease, or fewer jobs than leases", line)
	}
	return s, nil
}
