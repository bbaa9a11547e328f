package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/spool"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

// spoolProducerEnv, set in the environment of a re-run of the test binary,
// makes it a spool producer (spoolProducerMain) instead of running tests:
// its value is a spoolProducerArgs in JSON.
const spoolProducerEnv = "ORDERLY_TEST_SPOOL_PRODUCER"

// spoolProducerArgs tell a producer process what to do.
type spoolProducerArgs struct {
	Redis, Dir, Log string
	// IDs ids get one payload each per round, one Enqueue per id, a round
	// every Every; the rounds are numbered from FirstSeq.
	IDs      int
	Every    time.Duration
	FirstSeq int
}

// spoolProducerMain is a producer with a client spool: it enqueues until
// SIGTERM, writing a line to its log for every call that returned nil
// ("ok ID PAYLOAD SPOOLED": the jobs are in Redis or in the spool), then
// drains the spool and exits 0. It is SIGKILLed at will.
func spoolProducerMain() int {
	var a spoolProducerArgs
	if err := json.Unmarshal([]byte(os.Getenv(spoolProducerEnv)), &a); err != nil {
		fmt.Fprintln(os.Stderr, "spool producer:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	logf, err := os.OpenFile(a.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "spool producer:", err)
		return 2
	}
	defer logf.Close()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	c, err := client.Open(a.Redis, &client.Config{Timeout: time.Second,
		Spool: &client.SpoolConfig{Dir: a.Dir, RetryEvery: 100 * time.Millisecond, RetryMax: time.Second, Logger: quiet}})
	if err != nil {
		fmt.Fprintf(logf, "error open %v\n", err)
		return 1
	}
	fmt.Fprintf(logf, "start %d\n", c.Spooled().Jobs)
	tick := time.NewTicker(a.Every)
	defer tick.Stop()
	for seq := a.FirstSeq; ctx.Err() == nil; seq++ {
		for i := range a.IDs {
			id := fmt.Sprintf("s%02d", i)
			payload := fmt.Sprintf("%s-%08d", id, seq)
			res, err := c.EnqueueReport(context.Background(), "orders", client.Job{ID: id, Payload: []byte(payload)})
			if err != nil {
				fmt.Fprintf(logf, "error %s %v\n", payload, err)
				continue
			}
			fmt.Fprintf(logf, "ok %s %s %d\n", id, payload, res.Spooled)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.DrainSpool(dctx); err != nil {
		fmt.Fprintf(logf, "error drain %v\n", err)
		return 1
	}
	if err := c.Close(); err != nil {
		fmt.Fprintf(logf, "error close %v\n", err)
		return 1
	}
	fmt.Fprintln(logf, "stopped")
	return 0
}

// startSpoolProducer starts a producer process (this test binary again).
func startSpoolProducer(t *testing.T, a spoolProducerArgs) *exec.Cmd {
	t.Helper()
	b, err := json.Marshal(a)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), spoolProducerEnv+"="+string(b))
	var logs nodetest.LogBuffer
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("producer (pid %d) stderr:\n%s", cmd.Process.Pid, logs.String())
		}
	})
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// spoolLog is what producers logged.
type spoolLog struct {
	starts   []int               // the spooled jobs each producer found at its start
	kept     map[string][]string // id -> payloads of the calls that returned nil
	spooled  int                 // of them, the jobs spooled
	errors   []string
	stopped  int
	maxRound int
}

func readSpoolLog(t *testing.T, path string) spoolLog {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	l := spoolLog{kept: map[string][]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) == 2 && fs[0] == "start":
			n, _ := strconv.Atoi(fs[1])
			l.starts = append(l.starts, n)
		case len(fs) == 4 && fs[0] == "ok":
			l.kept[fs[1]] = append(l.kept[fs[1]], fs[2])
			n, _ := strconv.Atoi(fs[3])
			l.spooled += n
			l.maxRound = max(l.maxRound, roundOf(fs[2]))
		case len(fs) == 1 && fs[0] == "stopped":
			l.stopped++
		case len(fs) > 0 && fs[0] == "error":
			l.errors = append(l.errors, sc.Text())
		}
	}
	require.NoError(t, sc.Err())
	return l
}

// roundOf is the round number of a producer's payload ("s03-00000042").
func roundOf(payload string) int {
	_, r, _ := strings.Cut(payload, "-")
	n, _ := strconv.Atoi(r)
	return n
}

// TestSpoolOutage is the spool's end-to-end test (docs/contract.md §6.7):
// a producer process enqueues with a client spool while Redis stops for
// 30 s (8 s with -short); it is SIGKILLed once while spooling and started
// again, and replays what the first one spooled. A real node delivers to a
// recording webhook. At the end every payload whose call returned nil was
// delivered, in send order per id, and none twice under one lease: the
// spool's replays were duplicates under the queue's dedup window.
func TestSpoolOutage(t *testing.T) {
	t.Parallel()
	outage := 30 * time.Second
	if testing.Short() {
		outage = 8 * time.Second
	}
	tl := newTimeline(t)
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	rcv := nodetest.NewReceiver(t, nil)
	cfg := ordersConfig(rcv.URL, 4, "5s") + "    dedup_window: 10m\n"
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg})
	n.WaitReady()
	store := directStore(t, srv.Addr())

	work := t.TempDir()
	dir, logPath := filepath.Join(work, "spool"), filepath.Join(work, "producer.log")
	args := spoolProducerArgs{Redis: srv.URL() + "?dial_timeout=200ms&max_retries=-1", Dir: dir, Log: logPath,
		IDs: 8, Every: 40 * time.Millisecond, FirstSeq: 1}
	p := startSpoolProducer(t, args)
	time.Sleep(3 * time.Second)

	srv.Stop(t)
	tl.note("Redis stopped")
	downAt := time.Now()
	require.Eventually(t, func() bool {
		st, err := spool.Inspect(dir, nil)
		return err == nil && st.Jobs > 20
	}, 20*time.Second, 20*time.Millisecond, "the producer spools")
	time.Sleep(outage / 4)
	require.NoError(t, p.Process.Signal(syscall.SIGKILL))
	_ = p.Wait()
	tl.note("producer killed")
	before := readSpoolLog(t, logPath)
	args.FirstSeq = before.maxRound + 2 // past a round the killed one may have begun
	p = startSpoolProducer(t, args)
	time.Sleep(time.Until(downAt.Add(outage)))

	srv.Start(t)
	tl.note("Redis started")
	require.Eventually(t, func() bool {
		st, err := spool.Inspect(dir, nil)
		return err == nil && st.Jobs == 0
	}, time.Minute, 50*time.Millisecond, "the spool drains\ntimeline:\n%s", tl)
	tl.note("spool drained")
	time.Sleep(2 * time.Second)
	require.NoError(t, p.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.Wait(), "the producer drains and exits 0")
	tl.note("producer stopped")

	waitDrained(t, store, rcv, "orders", time.Minute, tl)
	log := readSpoolLog(t, logPath)
	require.Empty(t, log.errors, "every enqueue was kept")
	require.Len(t, log.starts, 2)
	require.Positive(t, log.starts[1], "the second producer found the first one's spool")
	require.Positive(t, log.spooled)
	require.Equal(t, 1, log.stopped)

	calls := history.FromWebhook(rcv.Calls())
	rep := history.Check(calls, log.kept, morgueOf(t, store, "orders"))
	t.Logf("%d payloads kept (%d spooled), outage %s; %s", countPayloads(log.kept), log.spooled, outage, rep)
	require.True(t, rep.OK(), "%s\ntimeline:\n%s", rep, tl)
	checkSendOrder(t, calls)
}

// checkSendOrder checks that each id's payloads were first acknowledged in
// the order the producers sent them (their round numbers grow): the
// spool's drain did not let a later payload pass a spooled one.
func checkSendOrder(t *testing.T, calls []history.Call) {
	t.Helper()
	slices.SortStableFunc(calls, func(a, b history.Call) int { return a.Start.Compare(b.Start) })
	last := map[string]int{}
	seen := map[string]bool{}
	for _, c := range calls {
		if !c.Acked {
			continue
		}
		for _, p := range c.Payloads {
			if seen[p.Data] {
				continue
			}
			seen[p.Data] = true
			r := roundOf(p.Data)
			require.Greater(t, r, last[c.ID], "id %s: payload %s acknowledged after round %d", c.ID, p.Data, last[c.ID])
			last[c.ID] = r
		}
	}
}

// TestEnqueueSpoolCLI runs the binary's enqueue --spool against a real node
// whose Redis stops: the node cannot take the jobs (5xx), the command
// spools them and says so, and once Redis is back the next enqueue sends
// them first; the webhook gets the id's payloads in send order.
func TestEnqueueSpoolCLI(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	rcv := nodetest.NewReceiver(t, nil)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: ordersConfig(rcv.URL, 2, "5s")})
	n.WaitReady()
	dir := t.TempDir()
	enq := func(payload string) (int, string, string) {
		return orderly(t, n, "enqueue", "--queue", "orders", "--id", "a", "--payload-raw", payload, "--spool", dir)
	}
	code, stdout, stderr := enq("1")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "enqueued 1 job into orders\n", stdout)

	srv.Stop(t)
	for _, p := range []string{"2", "3"} {
		code, stdout, stderr = enq(p)
		require.Equal(t, 0, code, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, "spooled 1 job in "+dir)
	}
	code, stdout, stderr = orderly(t, n, "spool", "status", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "2 jobs waiting in 2 spooled calls")

	srv.Start(t)
	eventually(t, "the node takes enqueues again", func() bool {
		code, _, _ := orderly(t, n, "stats")
		return code == 0
	})
	code, stdout, stderr = enq("4")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "enqueued 1 job into orders\n", stdout)
	var seen []string
	eventually(t, "every payload delivered", func() bool {
		seen = nil
		for _, c := range deliveriesOf(rcv, "a") {
			for _, j := range c.Request.Jobs {
				if j.ID == "a" && c.Acked(j.ID) {
					seen = append(seen, payloads(j)...)
				}
			}
		}
		return len(seen) >= 4
	})
	require.Equal(t, []string{"1", "2", "3", "4"}, seen)
	code, stdout, _ = orderly(t, n, "spool", "status", dir)
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "0 jobs waiting")
}
