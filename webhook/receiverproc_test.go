package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/orderlyhq/orderly/webhook/wire"
)

// benchReceiverEnv, when set, makes the test binary a minimal Go receiver
// instead of running tests: BenchmarkCallNode starts it as a process of its
// own, so that the node's CPU and the receiver's are measured apart.
const benchReceiverEnv = "ORDERLY_WEBHOOK_BENCH_RECEIVER"

// serveBenchReceiver listens on 127.0.0.1, prints its URL on stdout, and
// answers every request as BenchmarkCall's receiver does (decode into a
// Request, empty 200) until its stdin closes. It returns the exit code.
func serveBenchReceiver() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
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
			w.WriteHeader(http.StatusOK)
		}),
	}
	done := make(chan struct{})
	go func() { // stopped by srv.Close below
		defer close(done)
		_ = srv.Serve(ln)
	}()
	fmt.Printf("http://%s/perform\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark closes it
	_ = srv.Close()
	<-done
	return 0
}
