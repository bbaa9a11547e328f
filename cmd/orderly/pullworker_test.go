package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// A pull worker process for the chaos test of pull queues
// (TestChaosPull): the test binary run again with pullWorkerEnv set to a
// pullWorkerConfig (TestMain runs pullWorkerMain then). It pulls from
// every node, one loop per node, over raw HTTP, and records every lease
// (history.PullEvent lines) to its file before it answers, so that a
// SIGKILL loses at most the line being written.

// pullWorkerEnv names the environment variable that makes the test binary
// a pull worker.
const pullWorkerEnv = "ORDERLY_TEST_PULL_WORKER"

// Reasons a pull worker gives.
const (
	// lateReason is the dead reason of every id of an answer the worker
	// sends at or after its lease's deadline: the node must refuse it, so
	// that the reason never reaches the morgue.
	lateReason = "late answer: sent after the lease's deadline"
	// chosenDead is the reason of an id the worker answers dead.
	chosenDead = "chosen dead"
)

// pullWorkerConfig configures a pull worker process.
type pullWorkerConfig struct {
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"` // base URLs
	Queue string   `json:"queue"`
	Token string   `json:"token"`
	Out   string   `json:"out"` // the record file
	// MaxIDs is each pull's max_ids; Work the longest time, in ms, a
	// worker works on a lease.
	MaxIDs int `json:"max_ids"`
	Work   int `json:"work_ms"`
	// Slow, when not 0, adds a second loop per node whose leases take
	// from Slow/2 to Slow ms, extended by a second every 300 ms.
	Slow int `json:"slow_ms"`
}

// pullWorkerMain runs a pull worker process until SIGTERM: its loops then
// answer the leases they hold and stop. It returns the exit code.
func pullWorkerMain(raw string) int {
	var cfg pullWorkerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "pull worker: bad config:", err)
		return 2
	}
	f, err := os.OpenFile(cfg.Out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pull worker:", err)
		return 2
	}
	defer f.Close()
	w := &pullWorker{cfg: cfg, out: f, stop: make(chan struct{}),
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	go func() {
		<-sig
		close(w.stop)
	}()
	var wg sync.WaitGroup
	for _, node := range cfg.Nodes {
		wg.Go(func() { w.loop(node, cfg.Work/2, cfg.Work) })
		if cfg.Slow > 0 {
			wg.Go(func() { w.loop(node, cfg.Slow/2, cfg.Slow) })
		}
	}
	wg.Wait()
	if w.err != nil {
		fmt.Fprintln(os.Stderr, "pull worker:", w.err)
		return 1
	}
	return 0
}

// pullWorker is a pull worker process's loops.
type pullWorker struct {
	cfg    pullWorkerConfig
	client *http.Client
	stop   chan struct{} // closed on SIGTERM

	mu  sync.Mutex // guards out and err
	out *os.File
	err error
}

// record writes one line of the record.
func (w *pullWorker) record(e history.PullEvent) {
	e.Worker = w.cfg.Name
	b, err := json.Marshal(e)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		_, err = w.out.Write(append(b, '\n')) // one write: a kill cuts no line in two
	}
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("record: %w", err)
	}
}

// post sends body to the node's path with the worker token.
func (w *pullWorker) post(node, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, node+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("request %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+w.cfg.Token)
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("post %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("read the answer of %s: %w", path, err)
	}
	return resp.StatusCode, b, nil
}

// loop pulls from node until stopped, and works on each lease from lo to
// hi ms, then answers it.
func (w *pullWorker) loop(node string, lo, hi int) {
	pullBody := fmt.Appendf(nil, `{"max_ids":%d,"wait":1}`, w.cfg.MaxIDs)
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		code, body, err := w.post(node, "/api/v1/queues/"+w.cfg.Queue+"/pull", pullBody)
		if err != nil || code != http.StatusOK {
			if code != http.StatusNoContent {
				time.Sleep(50 * time.Millisecond) // the node is down or stopping
			}
			continue
		}
		var l apiv1.PullLease
		if err := json.Unmarshal(body, &l); err != nil {
			w.record(history.PullEvent{Kind: "bad", Node: node, Err: err.Error()}) // ReadPull fails on it
			continue
		}
		w.record(history.PullEvent{Kind: history.PullEventPull, Node: node, Lease: l.Lease, At: time.Now(), Deadline: l.Deadline, Jobs: l.Jobs})
		w.work(node, l, time.Duration(lo+rand.IntN(hi-lo+1))*time.Millisecond)
	}
}

// work works on a lease for d, extending it every 300 ms, then answers it:
// most ids done, some failed, a few dead (by their first payload); every
// id dead with lateReason when the deadline passed.
func (w *pullWorker) work(node string, l apiv1.PullLease, d time.Duration) {
	deadline := history.UnixDeadline(l.Deadline)
	for end := time.Now().Add(d); time.Until(end) > 0; {
		time.Sleep(min(time.Until(end), 300*time.Millisecond))
		if time.Until(end) > 0 {
			if to, ok := w.extend(node, l.Lease).ExtendedTo(); ok && to.After(deadline) {
				deadline = to
			}
		}
	}
	now := time.Now()
	a := &wire.Answer{}
	for _, j := range l.Jobs {
		switch {
		case !now.Before(deadline.Add(time.Millisecond)): // late for sure (history.PullCall.Late)
			setReason(&a.Dead, j.ID, lateReason)
		case len(j.Payloads) > 0 && hashOf(j.Payloads[0].Data)%100 == 7:
			setReason(&a.Dead, j.ID, chosenDead)
		case rand.IntN(20) == 0:
			setReason(&a.Failed, j.ID, "random failure")
		}
	}
	w.record(history.PullEvent{Kind: history.PullEventSend, Lease: l.Lease, At: now, Answer: a})
	b, _ := json.Marshal(a) // a map of strings: never fails
	code, body, err := w.post(node, "/api/v1/queues/"+w.cfg.Queue+"/pull/"+l.Lease+"/answer", b)
	e := history.PullEvent{Kind: history.PullEventAnswer, Lease: l.Lease, At: time.Now(), Status: code}
	switch {
	case err != nil && code == 0:
		e.Err, e.NotDelivered = err.Error(), errors.Is(err, syscall.ECONNREFUSED)
	case code == http.StatusOK:
		var ok apiv1.PullAnswered
		if err := json.Unmarshal(body, &ok); err != nil {
			e.Err = err.Error()
		}
		e.Lost = ok.Lost
	case code == http.StatusConflict:
		var c apiv1.PullConflict
		_ = json.Unmarshal(body, &c)
		e.Reason = c.Reason
	default:
		e.Err = string(body)
	}
	w.record(e)
}

// extend extends a lease by a second and records it.
func (w *pullWorker) extend(node, lease string) history.PullEvent {
	code, body, err := w.post(node, "/api/v1/queues/"+w.cfg.Queue+"/pull/"+lease+"/extend", []byte(`{"by":1}`))
	e := history.PullEvent{Kind: history.PullEventExtend, Lease: lease, At: time.Now(), By: 1, Status: code}
	switch {
	case err != nil && code == 0:
		e.Err, e.NotDelivered = err.Error(), errors.Is(err, syscall.ECONNREFUSED)
	case code == http.StatusOK:
		var d apiv1.PullDeadline
		if err := json.Unmarshal(body, &d); err != nil {
			e.Err, e.Status = err.Error(), 0 // as if no response came
		}
		e.Deadline = d.Deadline
	case code == http.StatusConflict:
		var c apiv1.PullConflict
		_ = json.Unmarshal(body, &c)
		e.Reason = c.Reason
	default:
		e.Err = string(body)
	}
	w.record(e)
	return e
}

// setReason sets m[id] = reason, making m.
func setReason(m *map[string]string, id, reason string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[id] = reason
}

// pullWorkerProc is a pull worker process the test runs.
type pullWorkerProc struct {
	name, out string
	cmd       *exec.Cmd
	done      chan struct{} // closed when the process exited
	err       error         // its exit error, once done
}

// startPullWorker starts a pull worker process that records to a new file
// in dir.
func startPullWorker(t *testing.T, dir string, cfg pullWorkerConfig) *pullWorkerProc {
	t.Helper()
	f, err := os.CreateTemp(dir, cfg.Name+"-*.jsonl")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	cfg.Out = f.Name()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), pullWorkerEnv+"="+string(raw))
	logs := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	p := &pullWorkerProc{name: cfg.Name, out: cfg.Out, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		<-p.done
		if t.Failed() && logs.Len() > 0 {
			t.Logf("output of pull worker %s: %s", p.name, logs)
		}
	})
	return p
}

func (p *pullWorkerProc) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

// kill kills the worker with SIGKILL and waits for it.
func (p *pullWorkerProc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// stop stops the worker with SIGTERM (resuming it if it was stopped) and
// waits until it answered what it held and exited.
func (p *pullWorkerProc) stop(t *testing.T) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	p.signal(syscall.SIGCONT)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("pull worker %s did not stop", p.name)
	}
	require.NoError(t, p.err, "pull worker %s exits 0", p.name)
}

// openLeases reads the worker's record and returns the leases it pulled
// and has not answered yet, with their latest possible deadlines.
func (p *pullWorkerProc) openLeases(t *testing.T) map[string]time.Time {
	t.Helper()
	f, err := os.Open(p.out)
	require.NoError(t, err)
	defer f.Close()
	open := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<28)
	for sc.Scan() {
		var e history.PullEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Kind {
		case history.PullEventPull:
			open[e.Lease] = history.UnixDeadline(e.Deadline)
		case history.PullEventExtend:
			if d, ok := e.ExtendedTo(); ok && d.After(open[e.Lease]) {
				open[e.Lease] = d
			}
		case history.PullEventSend:
			delete(open, e.Lease)
		}
	}
	require.NoError(t, sc.Err())
	return open
}

// readPullRecords reads every record file of dir, and returns the calls
// and the file each is from.
func readPullRecords(t *testing.T, dir string) ([]history.PullCall, []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	require.NoError(t, err)
	var calls []history.PullCall
	var from []string
	for _, name := range files {
		f, err := os.Open(name)
		require.NoError(t, err)
		cs, err := history.ReadPull(f)
		f.Close()
		require.NoError(t, err, name)
		calls = append(calls, cs...)
		for range cs {
			from = append(from, name)
		}
	}
	return calls, from
}
