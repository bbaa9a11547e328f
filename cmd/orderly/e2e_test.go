package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

func TestMain(m *testing.M) {
	if os.Getenv(spoolProducerEnv) != "" {
		os.Exit(spoolProducerMain()) // a producer process of TestSpoolOutage
	}
	if cfg := os.Getenv(pullWorkerEnv); cfg != "" {
		os.Exit(pullWorkerMain(cfg)) // a pull worker process of TestChaosPull
	}
	flag.Parse()
	raiseParallel()
	redistest.AtExit(nodetest.Cleanup)
	redistest.Main(m)
}

// minParallel is how many of this package's parallel tests run at once
// unless -parallel says otherwise. They mostly wait: on node processes and
// redis-servers of their own, on faults they inject and on drains; so
// go test's default (GOMAXPROCS, 2 on a small CI machine) left the CPU
// idle for most of the package's run.
const minParallel = 6

// raiseParallel raises -test.parallel to minParallel when the command line
// did not set it and GOMAXPROCS is lower.
func raiseParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && runtime.GOMAXPROCS(0) < minParallel {
		if err := flag.Set("test.parallel", strconv.Itoa(minParallel)); err != nil {
			panic(err)
		}
	}
}

// webhookConfig is a queue handled by the receiver with a short retry policy.
func webhookConfig(url string, maxRetry int) string {
	return fmt.Sprintf(`
queues:
  - name: orders
    shards: 2
    batch_size: 10
    max_retry_count: %d
    retry: {policy: linear, base: 200ms}
    handler: {type: http, url: %q, timeout: 10s}
`, maxRetry, url)
}

func post(t *testing.T, n *nodetest.Node, path, body string) (int, map[string]any) {
	t.Helper()
	code, b := n.Do("POST", path, []byte(body))
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), "%s", b)
	return code, out
}

func enqueue(t *testing.T, n *nodetest.Node, body string) {
	t.Helper()
	code, out := post(t, n, "/api/v1/queues/orders/jobs", body)
	require.Equal(t, 202, code, "%v", out)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 10*time.Millisecond, what)
}

func payloads(j wire.Job) []string {
	var out []string
	for _, p := range j.Payloads {
		out = append(out, string(p.Data))
	}
	return out
}

var deliveryHeader = regexp.MustCompile(`^orders/[01]/[0-9]+/[0-9]+$`)

// TestWebhookSemantics runs the binary against a real redis-server with a
// queue handled by a webhook receiver, and checks merge, order by score,
// retry counts and backoff, the morgue, partial failure and delayed jobs
// through HTTP and the receiver.
func TestWebhookSemantics(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	hold := make(chan struct{})
	var flakyOnce, held = make(chan struct{}, 1), make(chan struct{}, 1)
	flakyOnce <- struct{}{}
	held <- struct{}{}
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		a := webhooktest.Answer{Failed: map[string]string{}}
		for _, j := range c.Request.Jobs {
			switch j.ID {
			case "hold":
				select {
				case <-held:
					a.Hold = hold
				default:
				}
			case "poison":
				a.Failed[j.ID] = "poison pill"
			case "flaky":
				select {
				case <-flakyOnce:
					a.Failed[j.ID] = "flaky"
				default:
				}
			}
		}
		return a
	})
	// Every request is signed (handler.secret): the receiver refuses
	// those that are not.
	rcv.RequireSignature([]byte("e2e-secret"), time.Minute)
	signed := strings.Replace(webhookConfig(rcv.URL, 2), "timeout: 10s}", "timeout: 10s, secret: e2e-secret}", 1)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: signed})
	n.WaitReady()

	// Merge and order: payloads enqueued while the id is held arrive
	// together, in score order, the lower score of an equal payload kept.
	enqueue(t, n, `[{"id":"hold","payload":"h0","score":0}]`)
	eventually(t, "first delivery of hold", func() bool { return len(rcv.JobsOf("hold")) == 1 })
	enqueue(t, n, `[{"id":"hold","payload":"h3","score":3},{"id":"hold","payload":"h1","score":1}]`)
	enqueue(t, n, `[{"id":"hold","payload":"h2","score":2},{"id":"hold","payload":"h3","score":30}]`)
	close(hold)
	eventually(t, "second delivery of hold", func() bool { return len(rcv.JobsOf("hold")) == 2 })
	got := rcv.JobsOf("hold")
	require.Equal(t, []string{`"h0"`}, payloads(got[0]))
	require.Equal(t, []string{`"h1"`, `"h2"`, `"h3"`}, payloads(got[1]))
	require.Equal(t, 3.0, got[1].Payloads[2].Score)

	// Retries and backoff, then the morgue after max_retry_count.
	start := time.Now()
	enqueue(t, n, `[{"id":"poison","payload":{"n":1}}]`)
	eventually(t, "poison in the morgue", func() bool {
		code, b := n.Do("GET", "/api/v1/queues/orders/morgue", nil)
		return code == 200 && strings.Contains(string(b), `"poison"`)
	})
	tries := rcv.JobsOf("poison")
	require.Len(t, tries, 3, "performed max_retry_count+1 times")
	for i, j := range tries {
		require.Equal(t, i-1, j.RetryCount)
	}
	require.Equal(t, "poison pill", tries[2].Error)
	ds := deliveriesOf(rcv, "poison")
	require.GreaterOrEqual(t, ds[1].Start.Sub(ds[0].Start), 200*time.Millisecond, "linear backoff: 200ms")
	require.GreaterOrEqual(t, ds[2].Start.Sub(ds[1].Start), 400*time.Millisecond, "then 400ms")
	t.Logf("poison: 3 attempts in %s", time.Since(start).Round(time.Millisecond))
	_, b := n.Do("GET", "/api/v1/queues/orders/morgue", nil)
	require.Contains(t, string(b), `"error":"poison pill"`)

	// Requeue from the morgue: delivered again, fresh.
	code, out := post(t, n, "/api/v1/queues/orders/morgue/requeue", `{"ids":["poison"]}`)
	require.Equal(t, 200, code)
	require.EqualValues(t, 1, out["requeued"])
	eventually(t, "requeued poison delivered", func() bool { return len(rcv.JobsOf("poison")) >= 4 })
	require.Equal(t, -1, rcv.JobsOf("poison")[3].RetryCount)

	// Partial failure: one id of the batch fails, the other is acknowledged.
	enqueue(t, n, `[{"id":"flaky","payload":1},{"id":"fine","payload":2}]`)
	eventually(t, "flaky retried", func() bool { return len(rcv.JobsOf("flaky")) == 2 })
	require.Len(t, rcv.JobsOf("fine"), 1)
	require.Equal(t, 0, rcv.JobsOf("flaky")[1].RetryCount)
	require.Equal(t, "flaky", rcv.JobsOf("flaky")[1].Error)

	// Delayed jobs are not delivered before their time.
	at := time.Now()
	enqueue(t, n, `[{"id":"later","perform_in":1}]`)
	eventually(t, "delayed job delivered", func() bool { return len(rcv.JobsOf("later")) == 1 })
	require.GreaterOrEqual(t, deliveriesOf(rcv, "later")[0].Start.Sub(at), time.Second)

	// Every delivery has its own Orderly-Delivery name.
	seen := map[string]bool{}
	for _, c := range rcv.Calls() {
		require.Regexp(t, deliveryHeader, c.Delivery())
		require.False(t, seen[c.Delivery()], "delivery %s reused", c.Delivery())
		seen[c.Delivery()] = true
	}

	// The stats endpoint agrees.
	code, b = n.Do("GET", "/api/v1/stats", nil)
	require.Equal(t, 200, code)
	var stats struct {
		Total struct{ Length, MorgueLength int }
	}
	require.NoError(t, json.Unmarshal(b, &stats))
	require.Zero(t, stats.Total.Length)

	// Prometheus metrics of what this node did.
	code, b = n.Do("GET", "/metrics", nil)
	require.Equal(t, 200, code)
	for _, want := range []string{
		`orderly_jobs_enqueued_total{queue="orders"}`,
		`orderly_jobs_processed_total{queue="orders"}`,
		`orderly_jobs_failed_total{queue="orders"}`,
		`orderly_jobs_dead_total{queue="orders"}`,
		`orderly_batch_duration_seconds_bucket{outcome="ok",queue="orders"`,
		`orderly_shards_owned{queue="orders"} 2`,
		`orderly_cluster_members{state="alive"} 1`,
		`orderly_queue_length{queue="orders"} 0`,
		`orderly_queue_morgue_length{queue="orders"}`,
		`orderly_redis_round_trips_total`,
		`orderly_lease_losses_total{queue="orders"} 0`,
		`orderly_webhook_requests_total{class="5xx",queue="orders"} 0`,
		`orderly_build_info{goversion="go`,
	} {
		require.Contains(t, string(b), want)
	}
	require.Regexp(t, `orderly_webhook_requests_total\{class="2xx",queue="orders"\} [1-9]`, string(b))
	require.Regexp(t, `orderly_job_wait_seconds_count\{queue="orders"\} [1-9]`, string(b))
	require.Regexp(t, `orderly_redis_command_duration_seconds_count [1-9]`, string(b))
	require.Regexp(t, `orderly_shard_lag_seconds\{queue="orders",shard="1"\} `, string(b))
	for _, c := range rcv.Calls() {
		require.NoError(t, c.SignatureErr, "every delivery is signed")
	}
}

func deliveriesOf(r *webhooktest.Receiver, id string) []webhooktest.Call {
	var out []webhooktest.Call
	for _, c := range r.Calls() {
		for _, j := range c.Request.Jobs {
			if j.ID == id {
				out = append(out, c)
			}
		}
	}
	return out
}

// TestSigkillRestoresInFlight kills a node while a batch is in flight: the
// next node restores it and it is delivered again; nothing is lost.
func TestSigkillRestoresInFlight(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	hold := make(chan struct{})
	defer close(hold)
	var held atomic.Bool
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		if c.Request.Jobs[0].ID == "k" && held.CompareAndSwap(false, true) {
			return webhooktest.Answer{Hold: hold}
		}
		return webhooktest.Answer{}
	})
	cfg := webhookConfig(rcv.URL, 25)
	n1 := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg, Args: []string{"--lease-ttl", "1s"}})
	n1.WaitReady()
	enqueue(t, n1, `[{"id":"k","payload":"k1","score":1},{"id":"other","payload":"o1"}]`)
	eventually(t, "k in flight", func() bool { return len(rcv.JobsOf("k")) == 1 })
	killed := time.Now()
	n1.Kill()

	n2 := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg, Args: []string{"--lease-ttl", "1s"}})
	eventually(t, "k delivered again", func() bool { return len(rcv.JobsOf("k")) == 2 })
	t.Logf("in-flight batch delivered again %s after SIGKILL", time.Since(killed).Round(time.Millisecond))
	require.Equal(t, -1, rcv.JobsOf("k")[1].RetryCount, "a crash is not a failure")
	// "other" may have been fetched but not yet delivered when n1 died:
	// its shard is restored too, maybe after k's. Wait for it.
	enqueued := map[string][]string{"k": {`"k1"`}, "other": {`"o1"`}}
	var rep history.Report
	eventually(t, "every payload acknowledged", func() bool {
		rep = history.Check(history.FromWebhook(rcv.Calls()), enqueued, nil)
		return len(rep.Lost) == 0
	})
	require.True(t, rep.OK(), rep.String())
	n2.WaitReady()
}

// TestGracefulSigterm stops a node with SIGTERM during a batch: the batch
// finishes and is acknowledged, leases are released, the node exits 0.
func TestGracefulSigterm(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		return webhooktest.Answer{Delay: time.Second}
	})
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: webhookConfig(rcv.URL, 25)})
	n.WaitReady()
	enqueue(t, n, `[{"id":"g","payload":"g1"}]`)
	eventually(t, "g in flight", func() bool { return len(rcv.JobsOf("g")) == 1 })
	n.Signal(syscall.SIGTERM)
	require.Equal(t, 0, n.Wait(15*time.Second), "exit code 0")
	calls := history.FromWebhook(rcv.Calls())
	require.Len(t, calls, 1)
	require.True(t, calls[0].Acked, "the batch was not cut")
	require.Contains(t, n.Logs(), "released shard")

	rdb := srv.Client(t)
	ctx := context.Background()
	for sh := range 2 {
		require.Zero(t, rdb.Exists(ctx, fmt.Sprintf("orderly:{orders:%d}:2:lease", sh)).Val(), "lease of shard %d released", sh)
	}
	st, err := rdb.HGet(ctx, fmt.Sprintf("orderly:{orders:%d}:2:meta", 0), "processed").Result()
	if err != nil {
		st, _ = rdb.HGet(ctx, "orderly:{orders:1}:2:meta", "processed").Result()
	}
	require.Equal(t, "1", st)
}

// TestQuickStart runs the node as the README's quick start does: no flags,
// the embedded store, the default queue with the log handler.
func TestQuickStart(t *testing.T) {
	t.Parallel()
	n := nodetest.Start(t, nodetest.Options{})
	n.WaitReady()
	code, out := post(t, n, "/api/v1/queues/default/jobs", `[{"id":"order-1","payload":{"state":"paid"}}]`)
	require.Equal(t, 202, code, "%v", out)
	eventually(t, "the log handler logs the job", func() bool { return strings.Contains(n.Logs(), "job_id=order-1") })
	require.Contains(t, n.Logs(), "EMBEDDED IN-MEMORY STORE")

	// SIGTSTP makes the node quiet (not ready, nothing processed); SIGCONT
	// resumes it.
	n.Signal(syscall.SIGTSTP)
	eventually(t, "quiet", func() bool { code, _ := n.Do("GET", "/readyz", nil); return code == 503 })
	code, _ = post(t, n, "/api/v1/queues/default/jobs", `[{"id":"while-quiet"}]`)
	require.Equal(t, 202, code, "a quiet node still accepts jobs")
	time.Sleep(200 * time.Millisecond)
	require.NotContains(t, n.Logs(), "job_id=while-quiet")
	n.Signal(syscall.SIGCONT)
	n.WaitReady()
	eventually(t, "processed after resume", func() bool { return strings.Contains(n.Logs(), "job_id=while-quiet") })

	n.Signal(syscall.SIGINT)
	require.Equal(t, 0, n.Wait(15*time.Second))
}

// TestBadInputAtStartAndOverHTTP: configuration errors name the key and
// exit 2; a Redis that may evict is refused; HTTP errors name the field.
func TestBadInputAtStartAndOverHTTP(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts nodetest.Options
		code int
		want string
	}{
		{"unknown key", nodetest.Options{Config: "node:\n  concurency: 3\n"}, 2, "unknown key node.concurency"},
		{"bad value", nodetest.Options{Config: "queues:\n  - name: q\n    shards: 0\n"}, 2, "queues[0].shards"},
		{"bad handler", nodetest.Options{Config: "queues:\n  - name: q\n    handler: {type: http}\n"}, 2, "queues[0].handler.url"},
		{"bad flag", nodetest.Options{Args: []string{"--concurrency", "many"}}, 2, "--concurrency"},
		{"bad env", nodetest.Options{Env: []string{"ORDERLY_SCHEDULER=fast"}}, 2, "ORDERLY_SCHEDULER"},
	}
	for _, c := range cases {
		n := nodetest.Launch(t, c.opts)
		require.Equal(t, c.code, n.Wait(30*time.Second), c.name)
		require.Contains(t, n.Logs(), c.want, c.name)
	}

	// Without a token the API stays on loopback unless told otherwise.
	port, err := redistest.FreePort()
	require.NoError(t, err)
	public := fmt.Sprintf("0.0.0.0:%d", port)
	n0 := nodetest.Launch(t, nodetest.Options{Args: []string{"--http", public}})
	require.Equal(t, 1, n0.Wait(30*time.Second))
	require.Contains(t, n0.Logs(), "without a token: set --http-token")
	n0 = nodetest.Launch(t, nodetest.Options{Args: []string{"--http", public, "--http-token", "s3cret"}, HTTPPort: port})
	n0.WaitHealthy()
	code, _ := n0.Do("GET", "/api/v1/stats", nil)
	require.Equal(t, 401, code, "the token is required")
	n0.Kill()

	help := nodetest.Launch(t, nodetest.Options{Args: []string{"--help"}})
	require.Equal(t, 0, help.Wait(30*time.Second))
	for _, flag := range []string{"--redis", "--config", "--concurrency", "--scheduler", "--lease-ttl", "--shutdown-timeout", "--http-token", "ORDERLY_REDIS"} {
		require.Contains(t, help.Logs(), flag)
	}

	lru := redistest.NewServer(t, redistest.Options{Args: []string{"--maxmemory-policy", "allkeys-lru"}})
	n := nodetest.Launch(t, nodetest.Options{Redis: lru.URL()})
	require.Equal(t, 1, n.Wait(30*time.Second))
	require.Contains(t, n.Logs(), "maxmemory-policy")
	n = nodetest.Start(t, nodetest.Options{Redis: lru.URL(), Args: []string{"--allow-eviction"}})
	n.WaitReady()

	for _, c := range []struct {
		path, body string
		code       int
		field      string
	}{
		{"/api/v1/queues/default/jobs", `[{"id":"a"`, 400, ""},
		{"/api/v1/queues/default/jobs", `[{"id":""}]`, 400, "jobs[0].id"},
		{"/api/v1/queues/default/jobs", `[{"id":"a","score":"high"}]`, 400, "jobs[0].score"},
		{"/api/v1/queues/default/jobs", `[{"id":"a","perform_at":1,"perform_in":1}]`, 400, "jobs[0].perform_in"},
		{"/api/v1/queues/nope/jobs", `[{"id":"a"}]`, 404, "queue"},
		{"/api/v1/queues/default/morgue/requeue", `{"all":false}`, 400, "all"},
	} {
		code, out := post(t, n, c.path, c.body)
		require.Equal(t, c.code, code, "%s %s: %v", c.path, c.body, out)
		require.NotEmpty(t, out["error"])
		if c.field != "" {
			require.Equal(t, c.field, out["field"], "%s %s", c.path, c.body)
		}
	}
}

// TestRedisDownAtStart: the node starts while Redis is down, reports not
// ready, and serves once Redis is up.
func TestRedisDownAtStart(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	srv.Stop(t)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL()})
	code, b := n.Do("GET", "/readyz", nil)
	require.Equal(t, 503, code, "%s", b)
	time.Sleep(500 * time.Millisecond)
	code, _ = n.Do("GET", "/readyz", nil)
	require.Equal(t, 503, code)
	srv.Start(t)
	n.WaitReady()
	code, out := post(t, n, "/api/v1/queues/default/jobs", `[{"id":"after-start"}]`)
	require.Equal(t, 202, code, "%v", out)
	eventually(t, "processed", func() bool { return strings.Contains(n.Logs(), "job_id=after-start") })
}
