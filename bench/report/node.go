package main

// An orderly node process the report starts, feeds over HTTP and meters.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/internal/redisserver"
)

// procCPU returns a process's CPU seconds: the sum over its threads of
// /proc/PID/task/TID/schedstat (nanoseconds on a CPU), or, where that is
// missing, user and system time from /proc/PID/stat (clock ticks).
func procCPU(pid int) (float64, error) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var ns int64
	read := 0
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		ns += v
		read++
	}
	if read > 0 {
		return float64(ns) / 1e9, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

// node is an orderly node process serving one queue, "bench".
type node struct {
	cmd  *exec.Cmd
	api  string
	http *http.Client
	log  string
	done chan error
}

func startNode(ctx context.Context, bin, redisURL, handler string) (*node, error) {
	return startNodeBatch(ctx, bin, redisURL, handler, 1)
}

// startNodeBatch is startNode with the queue's batch_size.
func startNodeBatch(ctx context.Context, bin, redisURL, handler string, batch int) (*node, error) {
	dir, err := os.MkdirTemp("", "orderly-report-")
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "orderly.yaml")
	yaml := "queues:\n  - name: bench\n    shards: 5\n    batch_size: 1\n    handler: " + handler + "\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	port, err := redisserver.FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	gossip, err := redisserver.FreePort() // not the default 7946, which another node may hold
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "node.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", conf, "--redis", redisURL, "--http", addr, "--bind", "127.0.0.1:"+strconv.Itoa(gossip),
		"--concurrency", "5", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// One keep-alive connection, as a client library would use.
	n := &node{cmd: cmd, api: "http://" + addr, log: logf.Name(), done: make(chan error, 1),
		http: &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}, Timeout: time.Minute}}
	go func() { n.done <- cmd.Wait(); logf.Close() }() // ends with the process, stopped by stop
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := n.http.Get(n.api + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n, nil
			}
		}
		select {
		case err := <-n.done:
			b, _ := os.ReadFile(n.log)
			return nil, fmt.Errorf("node exited before ready: %v\n%s", err, b)
		default:
		}
		if time.Now().After(deadline) {
			n.stop()
			return nil, errors.New("node not ready after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *node) stop() {
	n.cmd.Process.Signal(os.Interrupt)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		n.cmd.Process.Kill()
		<-n.done
	}
	os.RemoveAll(filepath.Dir(n.log))
}

func (n *node) post(path string, body []byte) error {
	resp, err := n.http.Post(n.api+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s %s", path, resp.Status, b)
	}
	return nil
}

// enqueue POSTs jobs job-0 .. job-(n-1) in bodies of 1000 on the node's one
// connection and returns the rate.
func (n *node) enqueue(count int) (float64, error) {
	var bodies [][]byte
	for start := 0; start < count; start += 1000 {
		var b bytes.Buffer
		b.WriteByte('[')
		for i := start; i < min(start+1000, count); i++ {
			if i > start {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"job-%d"}`, i)
		}
		b.WriteByte(']')
		bodies = append(bodies, b.Bytes())
	}
	t0 := time.Now()
	for _, b := range bodies {
		if err := n.post("/api/v1/queues/bench/jobs", b); err != nil {
			return 0, err
		}
	}
	return float64(count) / time.Since(t0).Seconds(), nil
}

// waitEmpty polls the queue every 10 ms on the node's one connection until
// nothing is queued or in flight, and returns the polls it made.
func (n *node) waitEmpty(limit time.Duration) (int, error) {
	deadline := time.Now().Add(limit)
	polls := 0
	for {
		polls++
		resp, err := n.http.Get(n.api + "/api/v1/queues/bench")
		if err != nil {
			return polls, err
		}
		var q struct {
			Length int64 `json:"length"`
			Busy   int64 `json:"busy"`
		}
		err = json.NewDecoder(resp.Body).Decode(&q)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return polls, fmt.Errorf("queue stats: %w", err)
		}
		if q.Length == 0 && q.Busy == 0 {
			return polls, nil
		}
		if time.Now().After(deadline) {
			return polls, fmt.Errorf("queue not empty after %s: %d queued, %d in flight", limit, q.Length, q.Busy)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// meter reads the CPU of the node, Redis and, when there is one, the
// receiver, and Redis's commands.
type meter struct {
	node, receiver int // pids; 0: none
	rdb            *redis.Client
}

type reading struct {
	at             time.Time
	node, receiver float64
	redis          redisserver.Usage
}

func (m meter) read(ctx context.Context) (reading, error) {
	var rd reading
	var err error
	if rd.redis, err = redisserver.ReadUsage(ctx, m.rdb); err != nil {
		return rd, err
	}
	if rd.node, err = procCPU(m.node); err != nil {
		return rd, err
	}
	if m.receiver != 0 {
		if rd.receiver, err = procCPU(m.receiver); err != nil {
			return rd, err
		}
	}
	rd.at = time.Now()
	return rd, nil
}

func (m meter) sample(a, b reading, jobs int) sample {
	s := blank()
	n := float64(jobs)
	u := b.redis.Sub(a.redis)
	s.rate = n / b.at.Sub(a.at).Seconds()
	s.nodeCPU = (b.node - a.node) / n * 1e6
	s.redisCPU = u.CPUSeconds / n * 1e6
	s.cmds = float64(u.Commands) / n
	if m.receiver != 0 {
		s.receiverCPU = (b.receiver - a.receiver) / n * 1e6
	}
	return s
}
