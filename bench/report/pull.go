package main

// The pull runs: Lowkiq's workload on a pull queue, drained by a pull
// worker of each language in a process of its own.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/internal/redisserver"
)

// pullLangs are the pull workers, in the order they run: row key suffix
// and what runs it. python-before runs when --pull-python-before names an
// older sdk/python, right before python.
var pullLangs = []string{"go", "python", "typescript"}

// pullCommand is the command of a language's pull worker, or why it cannot
// run here (no python3, no node, the TypeScript SDK not built).
func (r *report) pullCommand(lang, api string) (*exec.Cmd, string) {
	args := []string{"--url", api, "--queue", "bench", "--concurrency", strconv.Itoa(r.cfg.pullConcurrency),
		"--max-ids", strconv.Itoa(r.cfg.pullMaxIDs), "--expect", strconv.Itoa(r.cfg.jobs)}
	switch lang {
	case "go":
		self, err := os.Executable()
		if err != nil {
			return nil, err.Error()
		}
		return exec.Command(self, append([]string{"pull-worker"}, args...)...), ""
	case "python", "python-before":
		if _, err := exec.LookPath("python3"); err != nil {
			return nil, "no python3"
		}
		if lang == "python-before" {
			args = append(args, "--sdk", r.cfg.pythonBefore)
		}
		return exec.Command("python3", append([]string{filepath.Join(r.cfg.root, "bench/report/pull_worker.py")}, args...)...), ""
	}
	if _, err := exec.LookPath("node"); err != nil {
		return nil, "no node"
	}
	if _, err := os.Stat(filepath.Join(r.cfg.root, "sdk/typescript/dist/src/index.js")); err != nil {
		return nil, "sdk/typescript not built (npm ci && npm run build there; run.sh does)"
	}
	return exec.Command("node", append([]string{filepath.Join(r.cfg.root, "bench/report/pull_worker.mjs")}, args...)...), ""
}

// pull runs each language's worker on a fresh server and node.
func (r *report) pull(ctx context.Context, round int) error {
	for _, lang := range r.cfg.pullLangs {
		if lang == "python" && r.cfg.pythonBefore != "" {
			if err := r.pullRun(ctx, round, "python-before"); err != nil {
				return fmt.Errorf("pull worker python-before: %w", err)
			}
		}
		if err := r.pullRun(ctx, round, lang); err != nil {
			return fmt.Errorf("pull worker %s: %w", lang, err)
		}
	}
	return nil
}

// pullRun queues the jobs on a node whose queue is a pull queue, starts the
// worker and, once it is ready, opens its gate: the clock runs until the
// worker has handled every job and the queue is empty. The worker then
// stops gracefully and says what it did.
func (r *report) pullRun(ctx context.Context, round int, lang string) error {
	srv, err := redisserver.Start(redisserver.Options{})
	if err != nil {
		return err
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	n, err := startNodeBatch(ctx, r.cfg.newBin, srv.URL(), "{type: pull, lease: 30s}", r.cfg.pullBatch)
	if err != nil {
		return err
	}
	defer n.stop()
	wk, why := r.pullCommand(lang, n.api)
	if wk == nil {
		r.raw(round, "pull/"+lang, "not run: "+why)
		return nil
	}
	wk.Stderr = os.Stderr
	gate, err := wk.StdinPipe()
	if err != nil {
		return err
	}
	out, err := wk.StdoutPipe()
	if err != nil {
		return err
	}
	if _, err := n.enqueue(r.cfg.jobs); err != nil {
		return err
	}
	if err := wk.Start(); err != nil {
		return err
	}
	defer func() { wk.Process.Kill(); wk.Wait() }() // after a graceful stop: a no-op
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		return fmt.Errorf("the worker did not start: %q %v", lines.Text(), lines.Err())
	}
	m := meter{node: n.cmd.Process.Pid, receiver: wk.Process.Pid, rdb: rdb}
	a, err := m.read(ctx)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(gate, "go\n"); err != nil {
		return err
	}
	// As the webhook runs do: the worker says when its handler has seen
	// every job, and only then is the queue polled until empty (the last
	// answers committed), so that polls do not load the node while it
	// works.
	if !lines.Scan() || lines.Text() != "handled" {
		return fmt.Errorf("the worker did not handle every job: %q %v", lines.Text(), lines.Err())
	}
	if _, err := n.waitEmpty(10 * time.Minute); err != nil {
		return err
	}
	b, err := m.read(ctx)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(gate, "stop\n"); err != nil {
		return err
	}
	if !lines.Scan() {
		return fmt.Errorf("the worker ended without its summary: %v", lines.Err())
	}
	sum, err := parseSummary(lines.Text())
	if err != nil {
		return err
	}
	s := m.sample(a, b, r.cfg.jobs)
	s.ok = sum.Jobs >= int64(r.cfg.jobs)
	key := "pull/" + lang
	r.raw(round, key, fmt.Sprintf("%.0f jobs/s, node %.2f + Redis %.2f + worker %.2f = %.1f µs/job, Redis commands %.3f/job, worker: %d jobs in %d leases (concurrency %d, max_ids %d, batch_size %d)",
		s.rate, s.nodeCPU, s.redisCPU, s.receiverCPU, s.cpu(), s.cmds, sum.Jobs, sum.Leases, r.cfg.pullConcurrency, r.cfg.pullMaxIDs, r.cfg.pullBatch))
	r.add(key, s)
	return nil
}
