package bench

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// PullAPI builds the HTTP API that serves the pull scenarios' broker: the
// binary sets it to the node's (package web, which the CLI's packages do
// not link themselves). Without it the pull scenarios fail.
var PullAPI func(store persistence.Store, broker *pull.Broker) (http.Handler, error)

// puller is the pull scenario's side: the node's pull broker behind the
// HTTP API on a loopback port, and a Go pull worker (client.PullWorker)
// that records each lease for the audit and acknowledges it, each answer
// asking for the loop's next lease ("next": one request per lease). Both
// run in the bench's process, so their CPU counts with the node's.
type puller struct {
	rc     *recorder
	broker *pull.Broker
	batch  int
	srv    *http.Server
	stop   context.CancelFunc
	done   chan struct{} // closed when the worker returned
	calls  atomic.Int64
}

func startPuller(rc *recorder, store persistence.Store, batch, maxIDs, loops int) (*puller, error) {
	log := slog.New(slog.DiscardHandler)
	p := &puller{rc: rc, broker: pull.New(&pull.Config{Logger: log}), batch: batch, done: make(chan struct{})}
	if PullAPI == nil {
		return nil, errors.New("bench: the pull scenarios need the HTTP API (bench.PullAPI)")
	}
	api, err := PullAPI(store, p.broker)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.srv = &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln) // stopped by close
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	w := &client.PullWorker{URL: "http://" + ln.Addr().String(), Queue: queue, MaxIDs: maxIDs, Wait: time.Second,
		Concurrency: loops, Handle: p.handle, Logger: log,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * loops}}}
	go func() {
		defer close(p.done)
		_ = w.Run(ctx)
	}()
	return p, nil
}

// handle records a lease's jobs and acknowledges them all.
func (p *puller) handle(_ context.Context, jobs []wire.Job) (*wire.Answer, error) {
	start := time.Now()
	delivery := "pull/" + strconv.FormatInt(p.calls.Add(1), 10) // one lease
	n := 0
	for _, j := range jobs {
		c := history.Call{ID: j.ID, Node: "pull-worker", Delivery: delivery, Start: start, End: start, Acked: true,
			Payloads: make([]history.Payload, len(j.Payloads))}
		for k, pl := range j.Payloads {
			c.Payloads[k] = history.Payload{Data: string(pl.Data), Score: pl.Score}
		}
		n += len(j.Payloads)
		p.rc.rec.Add(c)
	}
	p.rc.acked.Add(int64(n))
	return nil, nil
}

// handler returns the pull handler of the node.
func (p *puller) handler(string) orderly.HandlerFunc {
	return p.broker.Handler(queue, pull.Options{BatchSize: p.batch})
}

func (p *puller) close() {
	p.stop()
	p.broker.Stop()
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		p.srv.Close()
	}
}
