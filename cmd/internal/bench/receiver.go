package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// receiver is the minimal webhook receiver of the webhook scenario: it
// decodes each request as any Go receiver would (encoding/json into
// wire.Request), records the call for the audit and acknowledges the
// whole batch with an empty 200. It runs in the bench's process, so the
// CPU it spends counts with the node's.
type receiver struct {
	rc    *recorder
	srv   *http.Server
	url   string
	calls atomic.Int64

	mu      sync.Mutex        // guards senders
	senders []*webhook.Sender // the nodes' handlers, closed by close
}

func startReceiver(rc *recorder) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{rc: rc, url: "http://" + ln.Addr().String() + "/perform"}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln) // stopped by close
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
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
	delivery := req.Header.Get("Orderly-Delivery")
	end := time.Now()
	n := 0
	for _, j := range wr.Jobs {
		c := history.Call{ID: j.ID, Node: "receiver", Delivery: delivery, Start: start, End: end, Acked: true,
			Payloads: make([]history.Payload, len(j.Payloads))}
		for k, p := range j.Payloads {
			c.Payloads[k] = history.Payload{Data: string(p.Data), Score: p.Score}
		}
		n += len(j.Payloads)
		r.rc.rec.Add(c)
	}
	r.calls.Add(1)
	r.rc.acked.Add(int64(n))
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) close() {
	r.mu.Lock()
	for _, s := range r.senders {
		_ = s.Close()
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		r.srv.Close()
	}
}

// handler returns the webhook handler of every node: POSTs to the receiver.
func (r *receiver) handler(string) orderly.HandlerFunc {
	s, err := webhook.New(&webhook.Config{URL: r.url})
	if err != nil {
		panic(err) // the URL is ours and valid
	}
	r.mu.Lock()
	r.senders = append(r.senders, s)
	r.mu.Unlock()
	return s.Handle
}
