package main

// The pull-ceiling subcommand: a Python pull worker's own cost, fed by a
// fake node that answers at once with leases of many jobs, so that the
// worker, not the node, is the bound.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pullFeed is a fake node's pull routes for the queue "bench": a pull (or
// an answer's "next") takes up to perLease of the jobs left, an answer
// counts its lease's jobs as done, an extend moves nothing.
type pullFeed struct {
	perLease int

	mu      sync.Mutex
	next    int            // the next job's number
	total   int            // jobs to hand out
	leases  map[string]int // lease -> its jobs
	done    int            // jobs answered
	failed  int            // ids an answer named (the worker acknowledges all)
	allDone chan struct{}  // closed once done == total
}

func newPullFeed(total, perLease int) *pullFeed {
	return &pullFeed{perLease: perLease, total: total, leases: map[string]int{}, allDone: make(chan struct{})}
}

// take builds the next lease of up to maxIDs jobs, or returns nil when none is left.
func (f *pullFeed) take(maxIDs int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := min(maxIDs, f.perLease, f.total-f.next)
	if n <= 0 {
		return nil
	}
	lease := "lease-" + strconv.Itoa(f.next)
	f.leases[lease] = n
	var b bytes.Buffer
	now := float64(time.Now().UnixMicro()) / 1e6
	fmt.Fprintf(&b, `{"lease":%q,"deadline":%.3f,"jobs":[`, lease, now+30)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"job-%d","retry_count":-1,"perform_at":%f,"payloads":[{"payload":"","score":%f}]}`, f.next+i, now, now)
	}
	b.WriteString("]}")
	f.next += n
	return b.Bytes()
}

func (f *pullFeed) answered(lease string, named int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.leases[lease]
	if !ok {
		return false
	}
	delete(f.leases, lease)
	f.done += n
	f.failed += named
	if f.done == f.total {
		close(f.allDone)
	}
	return true
}

func (f *pullFeed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		MaxIDs int               `json:"max_ids"`
		Wait   float64           `json:"wait"`
		Failed map[string]string `json:"failed"`
		Next   *struct {
			MaxIDs int `json:"max_ids"`
		} `json:"next"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/queues/bench/pull"), "/")
	switch {
	case len(parts) == 1: // a pull
		if lease := f.take(body.MaxIDs); lease != nil {
			w.Write(lease)
			return
		}
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	case len(parts) == 3 && parts[2] == "extend":
		fmt.Fprintf(w, `{"deadline":%d}`, time.Now().Add(30*time.Second).Unix())
	case len(parts) == 3 && parts[2] == "answer":
		if !f.answered(parts[1], len(body.Failed)) {
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"error":"lease lost","reason":"unknown"}`)
			return
		}
		if body.Next != nil {
			if lease := f.take(body.Next.MaxIDs); lease != nil {
				fmt.Fprintf(w, `{"accepted":true,"next":%s}`, lease)
				return
			}
		}
		io.WriteString(w, `{"accepted":true}`)
	default:
		http.NotFound(w, r)
	}
}

// pullCeiling runs the Python pull worker of each --sdk directory in turn
// against a fake node (pullFeed) and prints, for each, jobs/s and the
// worker process's CPU µs per job.
//
//	report pull-ceiling --sdk /tmp/before/sdk/python,sdk/python --jobs 100000 --per-lease 100
func pullCeiling(args []string) error {
	fs := flag.NewFlagSet("pull-ceiling", flag.ContinueOnError)
	sdks := fs.String("sdk", "sdk/python", "comma-separated sdk/python `directories` to compare")
	jobs := fs.Int("jobs", 100_000, "jobs per run")
	perLease := fs.Int("per-lease", 100, "the most jobs of a lease")
	maxIDs := fs.Int("max-ids", 100, "the worker's max_ids")
	concurrency := fs.Int("concurrency", 8, "the worker's concurrency")
	rounds := fs.Int("rounds", 1, "runs of each directory, alternating")
	worker := fs.String("worker", "bench/report/pull_worker.py", "the Python pull worker")
	profile := fs.String("profile", "", "write each run's cProfile statistics of the worker to `FILE`.<round>.<n>")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for round := 1; round <= *rounds; round++ {
		for i, sdk := range strings.Split(*sdks, ",") {
			var extra []string
			if *profile != "" {
				extra = []string{"--profile", fmt.Sprintf("%s.%d.%d", *profile, round, i)}
			}
			line, err := ceilingRun(*worker, sdk, *jobs, *perLease, *maxIDs, *concurrency, extra...)
			if err != nil {
				return fmt.Errorf("%s: %w", sdk, err)
			}
			fmt.Printf("round=%d sdk=%s: %s\n", round, sdk, line)
		}
	}
	return nil
}

func ceilingRun(worker, sdk string, jobs, perLease, maxIDs, concurrency int, extra ...string) (string, error) {
	abs, err := filepath.Abs(sdk)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	feed := newPullFeed(jobs, perLease)
	srv := &http.Server{Handler: feed}
	go srv.Serve(ln) // ends with Close
	defer srv.Close()
	args := append([]string{worker, "--url", "http://" + ln.Addr().String(), "--queue", "bench", "--sdk", abs,
		"--concurrency", strconv.Itoa(concurrency), "--max-ids", strconv.Itoa(maxIDs)}, extra...)
	wk := exec.Command("python3", args...)
	wk.Stderr = os.Stderr
	gate, err := wk.StdinPipe()
	if err != nil {
		return "", err
	}
	out, err := wk.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := wk.Start(); err != nil {
		return "", err
	}
	defer func() { wk.Process.Kill(); wk.Wait() }() // after a graceful stop: a no-op
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		return "", fmt.Errorf("the worker did not start: %q %v", lines.Text(), lines.Err())
	}
	cpu0, err := procCPU(wk.Process.Pid)
	if err != nil {
		return "", err
	}
	t0 := time.Now()
	if _, err := io.WriteString(gate, "go\n"); err != nil {
		return "", err
	}
	select {
	case <-feed.allDone:
	case <-time.After(10 * time.Minute):
		return "", errors.New("not every job answered after 10 minutes")
	}
	elapsed := time.Since(t0)
	cpu1, err := procCPU(wk.Process.Pid)
	if err != nil {
		return "", err
	}
	if _, err := io.WriteString(gate, "stop\n"); err != nil {
		return "", err
	}
	if !lines.Scan() {
		return "", fmt.Errorf("the worker ended without its summary: %v", lines.Err())
	}
	sum, err := parseSummary(lines.Text())
	if err != nil {
		return "", err
	}
	feed.mu.Lock()
	failed := feed.failed
	feed.mu.Unlock()
	if failed > 0 {
		return "", fmt.Errorf("%d ids named in answers: the worker should acknowledge all", failed)
	}
	return fmt.Sprintf("%.0f jobs/s, worker %.2f µs/job (%.1f%% of a core), %d jobs in %d leases (concurrency %d, max_ids %d, per lease %d)",
		float64(jobs)/elapsed.Seconds(), (cpu1-cpu0)*1e6/float64(jobs), 100*(cpu1-cpu0)/elapsed.Seconds(),
		sum.Jobs, sum.Leases, concurrency, maxIDs, perLease), nil
}
