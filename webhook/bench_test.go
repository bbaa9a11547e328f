package webhook_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// benchReceiver is a minimal Go receiver on a real loopback listener: it
// decodes each request into a wire.Request, as receivers written in Go
// do, and acknowledges the whole batch with an empty 200. It counts the
// connections it accepted, to show that the node reuses them.
type benchReceiver struct {
	srv   *http.Server
	url   string
	conns atomic.Int64
	jobs  atomic.Int64
}

func startBenchReceiver(b *testing.B) *benchReceiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	r := &benchReceiver{url: "http://" + ln.Addr().String() + "/perform"}
	r.srv = &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				r.conns.Add(1)
			}
		},
	}
	done := make(chan struct{})
	go func() { // stopped by the cleanup below
		defer close(done)
		_ = r.srv.Serve(ln)
	}()
	b.Cleanup(func() {
		_ = r.srv.Close()
		<-done
	})
	return r
}

func (r *benchReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var wr wire.Request
	if err := json.Unmarshal(body, &wr); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.jobs.Add(int64(len(wr.Jobs)))
	w.WriteHeader(http.StatusOK)
}

// benchBatch is a batch of n blank jobs, each with one small JSON payload,
// as the node hands it to the webhook handler.
func benchBatch(n int) *orderly.Batch {
	b := &orderly.Batch{Queue: "bench", Shard: 3, Delivery: "bench/3/1795680448760/1"}
	for i := range n {
		b.Jobs = append(b.Jobs, orderly.Job{
			ID:         "order-" + strconv.Itoa(i),
			RetryCount: -1,
			PerformAt:  time.Unix(1795680448, 760_000_000),
			Payloads:   []orderly.Payload{{Data: []byte(`{"state":"paid","amount":1250}`), Score: 1795680448.76}},
		})
	}
	return b
}

// cpuTime is the user and system CPU time of this process.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCall measures one webhook call, one at a time, from the node's
// handler to a minimal Go receiver over loopback HTTP and back: request
// building and signing, the HTTP client and server, the receiver's decoding
// into wire.Request, and the answer's handling. Both ends run in this
// process, so cpu-us/call is their sum (Redis and the shard actor are not
// in it: `orderly bench --scenario webhook` measures the whole path) and
// allocs/op (-benchmem) counts both ends' allocations. conns is the number
// of connections the receiver accepted over the whole run: 1 when the
// client reuses its connection. Each case runs with the sender's direct
// client and with its net/http transport (client=direct, client=net-http).
func BenchmarkCall(b *testing.B) {
	for _, bc := range []struct {
		name   string
		jobs   int
		secret []byte
	}{
		{name: "batch1", jobs: 1},
		{name: "batch1-signed", jobs: 1, secret: []byte("s3cret")},
		{name: "batch10", jobs: 10},
	} {
		for _, client := range benchClients {
			b.Run(bc.name+"/client="+client.name, func(b *testing.B) {
				rcv := startBenchReceiver(b)
				sender, err := webhook.New(&webhook.Config{URL: rcv.url, Secret: bc.secret, NetHTTP: client.netHTTP})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = sender.Close() })
				batch := benchBatch(bc.jobs)
				// The node hands each call a context that ends by the
				// call's deadline (shared by the calls of a shard while it
				// lasts).
				ctx, cancel := context.WithTimeout(context.Background(), webhook.DefaultTimeout)
				defer cancel()
				if err := sender.Handle(ctx, batch); err != nil { // dial outside the measurement
					b.Fatal(err)
				}
				b.ReportAllocs()
				cpu0 := cpuTime(b)
				b.ResetTimer()
				for range b.N {
					if err := sender.Handle(ctx, batch); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				cpu := cpuTime(b) - cpu0
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/call")
				b.ReportMetric(float64(rcv.conns.Load()), "conns")
				if got, want := rcv.jobs.Load(), int64((b.N+1)*bc.jobs); got != want {
					b.Fatalf("the receiver decoded %d jobs, want %d", got, want)
				}
			})
		}
	}
}

// benchClients are the sender's two ways of sending to a plain http URL:
// its direct client (package h1, the default) and its net/http transport
// (Config.NetHTTP, handler.client: net/http).
var benchClients = []struct {
	name    string
	netHTTP bool
}{{"direct", false}, {"net-http", true}}

// BenchmarkCallNode is BenchmarkCall with the receiver in a process of its
// own (this test binary, started as one), as receivers are: node-us/call is
// the CPU of the handler's side alone (this process), receiver-us/call the
// receiver process's, read from /proc. In one process the two ends share
// the Go scheduler, whose wake-ups of idle threads then depend on how busy
// the machine is; apart, each side's cost is its own. The direct client's
// gain over net/http is the node-us/call of client=direct against
// client=net-http, side by side in one run:
//
//	go test -run '^$' -bench CallNode -count 6 ./webhook | benchstat -col /client -
func BenchmarkCallNode(b *testing.B) {
	for _, bc := range []struct {
		name string
		jobs int
	}{
		{name: "batch1", jobs: 1},
		{name: "batch10", jobs: 10},
	} {
		for _, client := range benchClients {
			b.Run(bc.name+"/client="+client.name, func(b *testing.B) {
				url, cpu := startReceiverProcess(b)
				sender, err := webhook.New(&webhook.Config{URL: url, NetHTTP: client.netHTTP})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = sender.Close() })
				batch := benchBatch(bc.jobs)
				ctx, cancel := context.WithTimeout(context.Background(), webhook.DefaultTimeout)
				defer cancel()
				if err := sender.Handle(ctx, batch); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				node0, rcv0 := cpuTime(b), cpu()
				b.ResetTimer()
				for range b.N {
					if err := sender.Handle(ctx, batch); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				node, rcv := cpuTime(b)-node0, cpu()-rcv0
				b.ReportMetric(float64(node.Nanoseconds())/1e3/float64(b.N), "node-us/call")
				b.ReportMetric(float64(rcv.Nanoseconds())/1e3/float64(b.N), "receiver-us/call")
			})
		}
	}
}

// startReceiverProcess starts this test binary as a receiver process
// (serveBenchReceiver) and returns its URL and a function that reads its
// CPU time; the process ends with the benchmark.
func startReceiverProcess(b *testing.B) (string, func() time.Duration) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc to read the receiver's CPU time")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "ORDERLY_WEBHOOK_BENCH_RECEIVER=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close() // the receiver stops when its stdin closes
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the receiver process printed no URL: %v", err)
	}
	pid := cmd.Process.Pid
	return strings.TrimSpace(line), func() time.Duration { return procCPU(b, pid) }
}

// procCPU is the user and system CPU time of process pid, from
// /proc/<pid>/stat (in clock ticks of 10 ms).
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's name, which is in parentheses.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("reading /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
