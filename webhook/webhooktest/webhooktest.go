// Package webhooktest provides a webhook receiver for tests and benchmarks,
// in the shape of net/http/httptest: NewReceiver starts an HTTP endpoint on
// 127.0.0.1 that decodes each delivery (wire.Request), answers it as an
// AnswerFunc decides (acknowledge, fail some ids, fail the whole delivery,
// answer late) and records every call with when it started and ended.
//
//	rcv := webhooktest.NewReceiver(func(c *webhooktest.Call) webhooktest.Answer {
//		return webhooktest.Answer{Failed: map[string]string{"order-2": "card declined"}}
//	})
//	defer rcv.Close()
//	// configure a queue with handler {type: http, url: rcv.URL}, enqueue, then:
//	for _, c := range rcv.Calls() { ... }
//
// The package does not import testing: the orderly bench command uses it
// as well as the tests. Of this module it imports only package wire, as any
// receiver written in Go does, so it links nothing of the node.
package webhooktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/webhook/wire"
)

// Path is the path of the receiver's endpoint, under its server's URL.
const Path = "/perform"

// Call is one delivery the receiver got.
type Call struct {
	// Header is the request's header; Delivery returns its
	// Orderly-Delivery.
	Header http.Header
	// Request is the decoded body.
	Request wire.Request
	// Answer is what the receiver answered, or was about to when the
	// call was cut.
	Answer Answer
	// Start is when the request arrived; End when the answer was about to
	// be written, or when the call was cut. End is zero while the call is
	// being answered.
	Start, End time.Time
	// Cut reports that the request ended before its answer was written:
	// the sender gave up (a timeout, a stop) or the connection broke. The
	// call acknowledged nothing.
	Cut bool
	// SignatureErr is why the request's Orderly-Signature did not verify,
	// when the receiver requires signatures (RequireSignature); such a call
	// is answered 401 without calling the AnswerFunc, and Request is empty.
	SignatureErr error
}

// Delivery returns the call's Orderly-Delivery header, which names the
// delivery attempt as "<queue>/<shard>/<epoch>/<seq>".
func (c *Call) Delivery() string { return c.Header.Get(wire.DeliveryHeader) }

// Acked reports whether the call acknowledged the job id: it was answered,
// not cut, with a 2xx status, and its answer neither failed id nor chose
// another outcome for it (Chose).
func (c *Call) Acked(id string) bool {
	if !c.answered() {
		return false
	}
	_, failed := c.Answer.Failed[id]
	return !failed && c.Chose(id) == ""
}

// Chose returns the outcome the call's answer chose for the job id
// (docs/contract.md §3.11): "retry_in", "dead" or "discard", as the
// answer's field is named; "" when it chose none, or when the answer was
// not written (the call is being answered, was cut, or failed as a whole).
func (c *Call) Chose(id string) string {
	if !c.answered() {
		return ""
	}
	if _, ok := c.Answer.RetryIn[id]; ok {
		return "retry_in"
	}
	if _, ok := c.Answer.Dead[id]; ok {
		return "dead"
	}
	if _, ok := c.Answer.Discard[id]; ok {
		return "discard"
	}
	return ""
}

// answered reports that the call's answer was written with a 2xx status.
func (c *Call) answered() bool { return !c.End.IsZero() && !c.Cut && c.Answer.succeeds() }

// Answer is how the receiver answers one delivery.
type Answer struct {
	// Status is the answer's HTTP status; 0 means 200. A status outside
	// 2xx fails the whole delivery.
	Status int
	// Failed fails these ids with these messages (a partial failure, sent
	// as a wire.Answer); the delivery's other ids are acknowledged.
	Failed map[string]string
	// Delay holds the answer back; Hold, when not nil, holds it until the
	// channel is closed. Both end early when the sender gives up.
	Delay time.Duration
	Hold  <-chan struct{}
	// State sets (a JSON value) or deletes (JSON null) the state of ids of
	// a stateful queue's delivery, and Timers sets (RFC 3339) or clears
	// (nil) their timers: the answer's "state" and "timers"
	// (docs/contract.md §6.4). The node commits them for the ids that did
	// not fail.
	State  map[string]json.RawMessage
	Timers map[string]*string
	// Emit enqueues jobs into any queue on behalf of ids of the delivery
	// (each names its id in From): the answer's "emit", committed with
	// that id's acknowledgement (docs/contract.md §11).
	Emit []wire.Emit
	// RetryIn, Dead and Discard choose the fate of ids of the delivery
	// (docs/contract.md §3.11): the answer's "retry_in" (snoozed for the
	// delay), "dead" (to the morgue now, with the reason) and "discard"
	// (dropped, with the reason).
	RetryIn map[string]wire.Delay
	Dead    map[string]string
	Discard map[string]string
}

func (a Answer) succeeds() bool { return a.Status == 0 || a.Status >= 200 && a.Status <= 299 }

// AnswerFunc decides the answer to a call whose Header, Request and Start
// are set. It is called for every request, concurrently.
type AnswerFunc func(c *Call) Answer

// Receiver is a webhook endpoint that answers deliveries and records them.
// Its methods are safe for concurrent use.
type Receiver struct {
	// URL is the endpoint to configure as a queue's handler url, of the
	// form http://127.0.0.1:port/perform; set by Start.
	URL string

	srv    *httptest.Server
	mu     sync.Mutex // guards answer, calls and active
	answer AnswerFunc
	calls  []Call
	active int
	secret []byte        // required signature's secret; nil: none
	skew   time.Duration // tolerance of the signature's time
}

// RequireSignature makes the receiver verify each request's signature
// (Orderly-Signature, or the Standard Webhooks headers, for which secret
// may be the whsec_ string) with wire.VerifyRequest under secret and
// tolerance
// (0: wire.DefaultTolerance). A request that fails is recorded with its
// SignatureErr and answered 401, which fails the delivery. A nil secret
// turns the check off.
func (r *Receiver) RequireSignature(secret []byte, tolerance time.Duration) {
	r.mu.Lock()
	r.secret, r.skew = slices.Clone(secret), tolerance
	r.mu.Unlock()
}

// NewReceiver starts and returns a receiver that answers as answer decides
// (nil acknowledges every delivery). The caller must Close it.
func NewReceiver(answer AnswerFunc) *Receiver {
	r := NewUnstartedReceiver(answer)
	r.Start()
	return r
}

// NewUnstartedReceiver returns a receiver that does not listen yet: call
// Start, and Close when done.
func NewUnstartedReceiver(answer AnswerFunc) *Receiver {
	r := &Receiver{answer: answer}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	return r
}

// Start starts the receiver on a free port of 127.0.0.1 and sets URL.
func (r *Receiver) Start() {
	r.srv.Start()
	r.URL = r.srv.URL + Path
}

// Close stops the receiver. It waits for the requests being answered;
// those held by an Answer end when their sender gives up.
func (r *Receiver) Close() { r.srv.Close() }

// SetAnswer replaces the answer function for the requests to come.
func (r *Receiver) SetAnswer(answer AnswerFunc) {
	r.mu.Lock()
	r.answer = answer
	r.mu.Unlock()
}

// Calls returns the calls so far in the order they arrived, those being
// answered included (with a zero End).
func (r *Receiver) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Active returns the number of requests being answered: received, and
// whose answer is not written yet.
func (r *Receiver) Active() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active
}

// JobsOf returns the delivered jobs of id in the order their calls
// arrived, those being answered included.
func (r *Receiver) JobsOf(id string) []wire.Job {
	var out []wire.Job
	for _, c := range r.Calls() {
		for _, j := range c.Request.Jobs {
			if j.ID == id {
				out = append(out, j)
			}
		}
	}
	return out
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != Path {
		http.Error(w, fmt.Sprintf("webhooktest: the endpoint is POST %s", Path), http.StatusNotFound)
		return
	}
	c := Call{Header: req.Header.Clone(), Start: time.Now()}
	r.mu.Lock()
	secret, skew := r.secret, r.skew
	r.mu.Unlock()
	if secret != nil {
		if _, err := wire.VerifyRequest(req, secret, skew, 0); err != nil {
			c.SignatureErr = err
			c.Answer = Answer{Status: http.StatusUnauthorized}
			c.End = time.Now()
			r.mu.Lock()
			r.calls = append(r.calls, c)
			r.mu.Unlock()
			http.Error(w, "webhooktest: "+err.Error(), http.StatusUnauthorized)
			return
		}
	}
	if err := json.NewDecoder(req.Body).Decode(&c.Request); err != nil {
		http.Error(w, "webhooktest: bad body: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	i := len(r.calls)
	r.calls = append(r.calls, c) // seen at once, End zero until answered
	r.active++
	answer := r.answer
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.active--
		r.mu.Unlock()
	}()

	if answer != nil {
		c.Answer = answer(&c)
	}
	wait(req, c.Answer)
	c.End = time.Now()
	c.Cut = req.Context().Err() != nil
	// The call is complete before the answer is written, so that a sender
	// that saw the answer finds it so in Calls.
	r.mu.Lock()
	r.calls[i] = c
	r.mu.Unlock()
	if c.Cut {
		return
	}
	write(w, c.Answer)
}

// wait holds the answer as a says, until req ends.
func wait(req *http.Request, a Answer) {
	if a.Hold != nil {
		select {
		case <-a.Hold:
		case <-req.Context().Done():
		}
	}
	if a.Delay > 0 {
		t := time.NewTimer(a.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-req.Context().Done():
		}
	}
}

// write writes the answer a.
func write(w http.ResponseWriter, a Answer) {
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	if !a.succeeds() {
		http.Error(w, "webhooktest: failing the delivery on purpose", status)
		return
	}
	if len(a.Failed) == 0 && len(a.State) == 0 && len(a.Timers) == 0 && len(a.Emit) == 0 &&
		len(a.RetryIn) == 0 && len(a.Dead) == 0 && len(a.Discard) == 0 {
		w.WriteHeader(status)
		return
	}
	body, err := json.Marshal(wire.Answer{Failed: a.Failed, State: a.State, Timers: a.Timers, Emit: a.Emit,
		RetryIn: a.RetryIn, Dead: a.Dead, Discard: a.Discard})
	if err != nil { // a State value that is not JSON: the AnswerFunc's mistake
		http.Error(w, "webhooktest: the answer does not encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
