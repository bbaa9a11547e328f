package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly/webhook/wire"
)

// receive is the minimal webhook receiver of the webhook runs, in a process
// of its own so that its CPU is measured apart: it decodes each request as
// a Go receiver would (encoding/json into wire.Request, the same
// protocol for both releases) and acknowledges the whole batch with an
// empty 200. Calls wait until a line comes on stdin (the gate); "ready" on
// stdout says it listens, and one more line when it got --expect payloads.
func receive(args []string) error {
	fs := flag.NewFlagSet("receive", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen `address`")
	expect := fs.Int64("expect", 0, "payloads after which to report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	open := make(chan struct{})
	var start time.Time // written before open is closed
	go func() {         // owned by the process: ends at the gate line or EOF
		bufio.NewReader(os.Stdin).ReadString('\n')
		start = time.Now()
		close(open)
	}()
	var payloads, calls atomic.Int64
	reported := make(chan struct{})
	var once atomic.Bool
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		<-open
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
		n := 0
		for _, j := range wr.Jobs {
			n += len(j.Payloads)
		}
		calls.Add(1)
		w.WriteHeader(http.StatusOK)
		if payloads.Add(int64(n)) >= *expect && once.CompareAndSwap(false, true) {
			close(reported)
		}
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) // ends with the process
	fmt.Println("ready")
	<-reported
	fmt.Printf("%d calls, %d payloads in %.2fs\n", calls.Load(), payloads.Load(), time.Since(start).Seconds())
	// Stay up for the last acknowledgements' round trips until killed.
	select {}
}
