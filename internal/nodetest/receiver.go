package nodetest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/orderlyhq/orderly/internal/history"
)

// Delivery is one webhook request as the receiver decoded it.
type Delivery struct {
	Header   string // Orderly-Delivery
	Queue    string
	Shard    int
	Jobs     []DeliveredJob
	Received time.Time
}

// DeliveredJob is one job of a delivery.
type DeliveredJob struct {
	ID         string
	RetryCount int
	PerformAt  float64
	Error      string
	Payloads   []history.Payload
}

// Answer is what the receiver answers to a delivery.
type Answer struct {
	// Fail fails these ids with these messages (partial failure).
	Fail map[string]string
	// Status, when not 0 or 200, fails the whole delivery with it.
	Status int
	// Delay holds the answer back.
	Delay time.Duration
	// Hold, when not nil, holds the answer until it is closed.
	Hold chan struct{}
}

// Receiver is a webhook endpoint that records deliveries and their history.
type Receiver struct {
	URL string
	// History holds one call per delivered job (acked unless failed).
	History history.Recorder

	srv    *httptest.Server
	mu     sync.Mutex // guards decide and deliveries
	decide func(Delivery) Answer
	all    []Delivery
}

// NewReceiver starts a receiver for a test; decide picks the answer to each
// delivery (nil acknowledges everything). It stops when the test ends.
func NewReceiver(t testing.TB, decide func(Delivery) Answer) *Receiver {
	r := StartReceiver(decide)
	t.Cleanup(r.Close)
	return r
}

// StartReceiver starts a receiver outside a test; Close stops it.
func StartReceiver(decide func(Delivery) Answer) *Receiver {
	r := &Receiver{decide: decide}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL + "/perform"
	return r
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

// SetDecide replaces the answer function.
func (r *Receiver) SetDecide(decide func(Delivery) Answer) {
	r.mu.Lock()
	r.decide = decide
	r.mu.Unlock()
}

// Deliveries returns the deliveries so far.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.all...)
}

// Of returns the deliveries that contained id, in order.
func (r *Receiver) Of(id string) []DeliveredJob {
	var out []DeliveredJob
	for _, d := range r.Deliveries() {
		for _, j := range d.Jobs {
			if j.ID == id {
				out = append(out, j)
			}
		}
	}
	return out
}

type wireBody struct {
	Queue string `json:"queue"`
	Shard int    `json:"shard"`
	Jobs  []struct {
		ID         string  `json:"id"`
		RetryCount int     `json:"retry_count"`
		PerformAt  float64 `json:"perform_at"`
		Error      string  `json:"error"`
		Payloads   []struct {
			Payload       json.RawMessage `json:"payload"`
			PayloadBase64 *string         `json:"payload_base64"`
			Score         float64         `json:"score"`
		} `json:"payloads"`
	} `json:"jobs"`
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	var body wireBody
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		http.Error(w, "bad body: "+err.Error(), http.StatusBadRequest)
		return
	}
	d := Delivery{Header: req.Header.Get("Orderly-Delivery"), Queue: body.Queue, Shard: body.Shard, Received: start}
	for _, j := range body.Jobs {
		dj := DeliveredJob{ID: j.ID, RetryCount: j.RetryCount, PerformAt: j.PerformAt, Error: j.Error}
		for _, p := range j.Payloads {
			data := string(p.Payload)
			if p.PayloadBase64 != nil {
				b, _ := base64.StdEncoding.DecodeString(*p.PayloadBase64)
				data = string(b)
			}
			dj.Payloads = append(dj.Payloads, history.Payload{Data: data, Score: p.Score})
		}
		d.Jobs = append(d.Jobs, dj)
	}
	r.mu.Lock()
	r.all = append(r.all, d)
	decide := r.decide
	r.mu.Unlock()
	var a Answer
	if decide != nil {
		a = decide(d)
	}
	if a.Hold != nil {
		select {
		case <-a.Hold:
		case <-req.Context().Done():
		}
	}
	if a.Delay > 0 {
		select {
		case <-time.After(a.Delay):
		case <-req.Context().Done():
		}
	}
	cut := req.Context().Err() != nil
	end := time.Now()
	for _, j := range d.Jobs {
		_, failed := a.Fail[j.ID]
		acked := !cut && !failed && (a.Status == 0 || a.Status == http.StatusOK)
		r.History.Add(history.Call{ID: j.ID, Node: d.Header, Delivery: d.Header, Start: start, End: end, Payloads: j.Payloads, Acked: acked})
	}
	if cut {
		return
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		http.Error(w, "failing on purpose", a.Status)
		return
	}
	if len(a.Fail) > 0 {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"failed": a.Fail})
		return
	}
	w.WriteHeader(http.StatusOK)
}
