package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

func TestMain(m *testing.M) {
	redistest.AtExit(nodetest.Cleanup)
	redistest.Main(m)
}

// requirePythonEnv makes a missing python3 a failure instead of a skip (CI
// sets it).
const requirePythonEnv = "ORDERLY_REQUIRE_PYTHON"

// final is what both versions of the pipeline end with, as the Go program
// prints it.
const final = `order-1  shipped     42.50  created -> paid -> shipped
order-2  cancelled    9.90  created -> cancelled (unpaid)
order-3  paid       120.00  created -> paid
order-4  cancelled   15.00  created -> cancelled (unpaid) -> paid (ignored: cancelled)
`

// notified is what the notifications queue got, emitted by the orders
// handler with its commits.
const notified = `notified order-1: paid
notified order-1: shipped
notified order-2: cancelled
notified order-3: paid
notified order-4: cancelled
`

// The Go program, on its in-memory Redis and on a real one: the paid order
// is shipped, the unpaid ones are cancelled by their timers, and a payment
// after the cancellation changes nothing but the history.
func TestGoPipeline(t *testing.T) {
	for name, args := range map[string][]string{
		"in-memory": {"--unpaid-after", "300ms"},
		"redis":     {"--unpaid-after", "300ms", "--redis", redistest.NewServer(t, redistest.Options{}).URL()},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, logs bytes.Buffer
			require.NoError(t, run(ctx, args, &out, &logs), "logs:\n%s", logs.String())
			require.Equal(t, final+notified, out.String())
		})
	}
}

// The Python receiver behind a real node process, configured by the
// example's orderly.yaml: the same final states, through the webhook
// protocol's state, version, timer and timers fields, with signed requests.
func TestPythonReceiver(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv(requirePythonEnv) != "" {
			t.Fatalf("python3 not found (%v), and %s is set", err, requirePythonEnv)
		}
		t.Skipf("python3 not found (%v): set %s to make this a failure", err, requirePythonEnv)
	}
	const secret = "change-me" // as in orderly.yaml
	rcv := exec.Command(python, "receiver.py", "--port", "0", "--unpaid-after", "0.5", "--secret", secret)
	stdout, err := rcv.StdoutPipe()
	require.NoError(t, err)
	var stderr nodetest.LogBuffer
	rcv.Stderr = &stderr
	require.NoError(t, rcv.Start())
	exited := make(chan struct{})
	lines := make(chan string, 1)
	var printed nodetest.LogBuffer
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for first := true; sc.Scan(); first = false {
			if first {
				lines <- sc.Text()
			}
			printed.Write([]byte(sc.Text() + "\n"))
		}
		rcv.Wait()
	}()
	t.Cleanup(func() {
		rcv.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("receiver.py printed:\n%s\nstderr:\n%s", printed.String(), stderr.String())
		}
	})
	var url string
	select {
	case line := <-lines:
		var ok bool
		url, ok = strings.CutPrefix(line, "listening on ")
		require.True(t, ok, "first line: %q", line)
	case <-exited:
		t.Fatalf("receiver.py exited: %s", stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("receiver.py did not start")
	}

	// An unsigned request is refused.
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"queue":"orders","shard":0,"jobs":[]}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// The example's config, pointed at this receiver; the node's address
	// comes from nodetest.
	cfg, err := os.ReadFile("orderly.yaml")
	require.NoError(t, err)
	conf := string(cfg)
	require.Equal(t, 2, strings.Count(conf, "http://127.0.0.1:9000/perform"), "both queues call the receiver")
	conf = strings.ReplaceAll(conf, "http://127.0.0.1:9000/perform", url)
	conf = strings.Replace(conf, "  http: 127.0.0.1:8080\n", "", 1)
	n := nodetest.Start(t, nodetest.Options{Config: conf})
	n.WaitReady()

	enqueue := func(body string) {
		t.Helper()
		code, ans := n.Do("POST", "/api/v1/queues/orders/jobs", []byte(body))
		require.Equal(t, http.StatusAccepted, code, "%s", ans)
	}
	states := func() map[string]Order {
		m := map[string]Order{}
		for _, id := range []string{"order-1", "order-2", "order-3", "order-4"} {
			code, body := n.Do("GET", "/api/v1/queues/orders/state/"+id, nil)
			require.Equal(t, http.StatusOK, code, "%s", body)
			var st struct {
				State *Order `json:"state"`
			}
			require.NoError(t, json.Unmarshal(body, &st), "%s", body)
			if st.State != nil {
				m[id] = *st.State
			}
		}
		return m
	}
	enqueue(`[
	  {"id": "order-1", "payload": {"event": "created", "total": 42.5}, "score": 1},
	  {"id": "order-1", "payload": {"event": "paid"}, "score": 2},
	  {"id": "order-1", "payload": {"event": "shipped"}, "score": 3},
	  {"id": "order-2", "payload": {"event": "created", "total": 9.9}, "score": 1},
	  {"id": "order-3", "payload": {"event": "created", "total": 120}, "score": 1},
	  {"id": "order-3", "payload": {"event": "paid"}, "score": 2},
	  {"id": "order-4", "payload": {"event": "created", "total": 15}, "score": 1}]`)
	require.Eventually(t, func() bool {
		m := states()
		return len(m) == 4 && m["order-2"].Status == "cancelled" && m["order-4"].Status == "cancelled"
	}, 30*time.Second, 50*time.Millisecond, "the unpaid orders are cancelled by their timers")
	enqueue(`[{"id": "order-4", "payload": {"event": "paid"}, "score": 2}]`)
	require.Eventually(t, func() bool { return len(states()["order-4"].Events) == 3 }, 30*time.Second, 50*time.Millisecond)

	var got strings.Builder
	for _, id := range []string{"order-1", "order-2", "order-3", "order-4"} {
		o := states()[id]
		got.WriteString(formatOrder(id, o))
	}
	require.Equal(t, final, got.String())
	// The notifications the receiver emitted came back to it, once each
	// in effect (a repeated emit merges), through signed deliveries.
	require.Eventually(t, func() bool {
		var lines []string
		for _, l := range strings.Split(printed.String(), "\n") {
			if strings.HasPrefix(l, "notified ") {
				lines = append(lines, l)
			}
		}
		slices.Sort(lines)
		return strings.Join(lines, "\n")+"\n" == notified
	}, 30*time.Second, 50*time.Millisecond, "the notifications arrive")
}
