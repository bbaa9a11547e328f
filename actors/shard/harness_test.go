package shard_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/logbridge"
	"github.com/orderlyhq/orderly/persistence"
)

// t0 is where the virtual clock of a test starts.
var t0 = time.Unix(1_700_000_000, 0)

// errNetwork is what a fake store call fails with when told to.
var errNetwork = errors.New("connection refused")

// fakeStore is a shard's view of a store in memory: it hands out its jobs,
// records every call the actor makes, and fails the calls it is told to.
// Leases never expire by themselves (time is virtual).
type fakeStore struct {
	persistence.Store // nil: a call the shard actor should not make panics

	mu         sync.Mutex // guards the fields below
	calls      []string
	advances   []persistence.AdvanceRequest
	jobs       []persistence.Job
	epoch      int64
	held       bool
	renewErr   error
	renewGate  chan struct{} // when set, each renewal waits for a value on it
	fetchGate  chan struct{} // when set, each Advance that fetches waits for a value on it
	advanceErr error
	releaseErr error
}

func (s *fakeStore) record(op string) {
	s.calls = append(s.calls, op)
}

// count returns how many calls of op the actor made.
func (s *fakeStore) count(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c == op {
			n++
		}
	}
	return n
}

func (s *fakeStore) requests() []persistence.AdvanceRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.advances)
}

func (s *fakeStore) set(f func(s *fakeStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *fakeStore) AcquireShard(_ context.Context, ref persistence.ShardRef, owner string, _ time.Duration) (persistence.Lease, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("acquire")
	if s.held {
		return persistence.Lease{}, 0, &persistence.LeaseHeldError{ShardRef: ref, Holder: "other", TTL: time.Second}
	}
	s.held = true
	s.epoch++
	return persistence.Lease{ShardRef: ref, Owner: owner, Epoch: s.epoch, Token: "token"}, 0, nil
}

func (s *fakeStore) RenewShard(context.Context, persistence.Lease, time.Duration) error {
	s.mu.Lock()
	s.record("renew")
	gate := s.renewGate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewErr
}

// RenewShards renews each lease as RenewShard does, one after the other.
func (s *fakeStore) RenewShards(ctx context.Context, leases []persistence.Lease, ttl time.Duration) []error {
	errs := make([]error, len(leases))
	for i, l := range leases {
		errs[i] = s.RenewShard(ctx, l, ttl)
	}
	return errs
}

func (s *fakeStore) ReleaseShard(context.Context, persistence.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("release")
	if s.releaseErr != nil {
		return s.releaseErr
	}
	s.held = false
	return nil
}

func (s *fakeStore) Advance(_ context.Context, l persistence.Lease, req persistence.AdvanceRequest) (persistence.AdvanceResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("advance")
	if gate := s.fetchGate; gate != nil && req.Fetch > 0 {
		s.mu.Unlock()
		<-gate
		s.mu.Lock()
	}
	if s.advanceErr != nil {
		return persistence.AdvanceResult{}, s.advanceErr
	}
	s.advances = append(s.advances, req)
	var res persistence.AdvanceResult
	if n := min(req.Fetch, len(s.jobs)); n > 0 {
		res.Batch = &persistence.Batch{ShardRef: l.ShardRef, Seq: req.NextSeq, Token: l.Token, Jobs: s.jobs[:n]}
		s.jobs = s.jobs[n:]
		res.More = len(s.jobs) > 0
	}
	return res, nil
}

// PollShards reports every shard while jobs wait.
func (s *fakeStore) PollShards(_ context.Context, refs []persistence.ShardRef) ([]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("poll")
	out := make([]bool, len(refs))
	for i := range out {
		out[i] = len(s.jobs) > 0
	}
	return out, nil
}

func (s *fakeStore) TrimMorgue(context.Context, persistence.ShardRef, time.Time, int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("trim")
	return 0, nil
}

// fakeNode stands in for the node actor: it spawns the shard actor as its
// child, records what the shard sends, grants permits at once and answers
// a PermitReturn with Again as keep says.
type fakeNode struct {
	props *actor.Props
	pid   chan *actor.PID
	h     *harness
	shard *actor.PID
}

func (f *fakeNode) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		f.shard = c.Spawn(f.props)
		f.pid <- f.shard
	case shard.PermitRequest:
		f.h.event("request")
		c.Send(f.shard, shard.PermitGranted{})
	case shard.PermitReturn:
		if !m.Again {
			f.h.event("return")
			return
		}
		f.h.mu.Lock()
		keep := f.h.keep
		f.h.mu.Unlock()
		if keep {
			f.h.event("keep")
			c.Send(f.shard, shard.PermitGranted{})
		} else {
			// Recorded once sent: a test that grants the permit on seeing
			// "yield" sends after PermitWait is in the shard's mailbox.
			c.Send(f.shard, shard.PermitWait{})
			f.h.event("yield")
		}
	case shard.Report:
		f.h.mu.Lock()
		f.h.report = m
		f.h.mu.Unlock()
	case *actor.Terminated:
		f.h.event("terminated")
	}
}

// harness drives one shard actor in virtual time.
type harness struct {
	t     *testing.T
	sys   *actor.ActorSystem
	clock *clock.Simulated
	store *fakeStore
	logs  *logBuffer
	shard *actor.PID
	obs   *observer

	prefetch    int           // ids per fetch [1]
	maxPrefetch int           // ids per fetch while busy [prefetch]
	maxPayloads int           // max_payloads_per_call [7]
	callTimeout time.Duration // [shard.DefaultCallTimeout]
	concurrent  int           // calls of a window at once [1]
	// storeOverride, when set, is the store the actor talks to (a wrapper
	// of store).
	storeOverride persistence.Store
	onDead        func(context.Context, []persistence.Job)
	// paused starts the actor with its queue paused.
	paused bool
	// batched makes a node-wide shard.Renewer renew the lease, as a node
	// does, instead of the actor itself.
	batched bool
	// polled makes a node-wide shard.Poller poll the idle shard, as a node
	// does, instead of the actor itself; poller is it, once started.
	polled   bool
	poller   *shard.Poller
	idlePoll time.Duration // [time.Minute]

	mu     sync.Mutex // guards the fields below
	events []string
	keep   bool
	report shard.Report
}

// newHarness returns a harness whose clock stands at t0; start starts its
// shard actor.
func newHarness(t *testing.T, store *fakeStore) *harness {
	return &harness{t: t, clock: clock.NewSimulated(t0), store: store, logs: &logBuffer{}, obs: &observer{}, keep: true}
}

// start starts a shard actor (LeaseTTL 3 s, one id per handler call, no
// morgue retention) over the store, whose handler calls are made by process.
func (h *harness) start(process shard.Processor) {
	t := h.t
	t.Helper()
	log := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.sys = actor.NewActorSystem(actor.WithLoggerFactory(logbridge.Protoactor(log)), actor.WithDeadLetterThrottleInterval(100*time.Millisecond))
	var st persistence.Store = h.store
	if h.storeOverride != nil {
		st = h.storeOverride
	}
	var renewer *shard.Renewer
	if h.batched {
		renewer = shard.NewRenewer(st, 3*time.Second, h.clock, log)
		renewer.Start()
		t.Cleanup(func() { require.NoError(t, renewer.Stop(context.Background())) }) // after the actor stopped (cleanups run last first)
	}
	idlePoll := h.idlePoll
	if idlePoll == 0 {
		idlePoll = time.Minute
	}
	if h.polled {
		h.poller = shard.NewPoller(st, idlePoll, h.clock, log)
		h.poller.Start()
		t.Cleanup(func() { require.NoError(t, h.poller.Stop(context.Background())) })
	}
	maxPayloads := h.maxPayloads
	if maxPayloads == 0 {
		maxPayloads = 7
	}
	props := shard.Props(shard.Config{
		Ref: persistence.ShardRef{Queue: "q", Shard: 1}, Store: st, OnDead: h.onDead, Owner: "n", MaxRetryCount: 25,
		LeaseTTL: 3 * time.Second, IdlePoll: idlePoll, Poller: h.poller, Process: process, Prefetch: h.prefetch,
		CallTimeout: h.callTimeout, MaxPayloads: maxPayloads, MaxPrefetch: h.maxPrefetch, ConcurrentCalls: h.concurrent,
		Clock: h.clock, Logger: log, Observer: h.obs, Renewer: renewer, Paused: h.paused,
	})
	f := &fakeNode{props: props, pid: make(chan *actor.PID, 1), h: h}
	node := h.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return f }))
	h.shard = <-f.pid
	t.Cleanup(func() {
		_ = h.sys.Root.StopFuture(node).Wait()
		h.sys.Shutdown()
		if t.Failed() {
			t.Logf("shard actor log:\n%s", h.logs.String())
		}
	})
}

// renewModes runs a lease test twice: with the actor renewing its own lease,
// and with a node-wide Renewer renewing it (renewal cadence, guard and
// cancellations are the same).
func renewModes(t *testing.T, test func(t *testing.T, batched bool)) {
	for _, batched := range []bool{false, true} {
		name := "own"
		if batched {
			name = "batched"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, batched)
		})
	}
}

func (h *harness) event(e string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

// seen returns the events recorded so far.
func (h *harness) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

func (h *harness) serving() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.report.Serving
}

func (h *harness) send(m any) { h.sys.Root.Send(h.shard, m) }

// eventually waits (in real time) until cond holds.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	require.Eventually(h.t, cond, 5*time.Second, time.Millisecond, what)
}

// wait waits (in real time) for ch to deliver a value or be closed.
func wait[T any](h *harness, ch <-chan T, what string) T {
	h.t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		h.t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// advanceTo moves the virtual clock to t0 + d.
func (h *harness) advanceTo(d time.Duration) { h.clock.Set(t0.Add(d)) }

// armedAt waits until a timer of the actor is due at t0 + d.
func (h *harness) armedAt(d time.Duration) {
	h.t.Helper()
	h.eventually("a timer due at t0+"+d.String(), func() bool { return slices.Contains(h.clock.Timers(), t0.Add(d)) })
}

// armedBefore waits until a timer of the actor is due before t0 + d.
func (h *harness) armedBefore(d time.Duration) {
	h.t.Helper()
	h.eventually("a timer due before t0+"+d.String(), func() bool {
		next, ok := h.clock.Next()
		return ok && next.Before(t0.Add(d))
	})
}

// observer records the actor's Observer events.
type observer struct {
	mu         sync.Mutex // guards the fields below
	batches    int
	failed     int
	leasesLost int
	stuck      []time.Duration
	retried    int // settles sent again
	lostIDs    int // ids of handled windows left to the next owner
}

func (o *observer) SettleRetried(persistence.ShardRef) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retried++
}

func (o *observer) WindowLost(_ persistence.ShardRef, ids int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lostIDs += ids
}

// settles returns the settles sent again and the ids left to the next
// owner.
func (o *observer) settles() (retried, lostIDs int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.retried, o.lostIDs
}

func (o *observer) HandlerStuck(_ persistence.ShardRef, age time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stuck = append(o.stuck, age)
}

func (o *observer) stuckAges() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.stuck)
}

func (o *observer) BatchDone(_ persistence.ShardRef, _, failed int, _ time.Duration, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.batches++
	o.failed += failed
}

func (o *observer) LeaseLost(persistence.ShardRef) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.leasesLost++
}

func (o *observer) losses() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.leasesLost
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) has(s string) bool { return strings.Contains(l.String(), s) }

// call records one handler call: when it started, when it saw its context
// cancelled (virtual time), and why.
type call struct {
	ids       []string
	cancelled chan struct{}
	cause     error
	at        time.Time
}

// blocking returns a processor whose calls block until their context is
// cancelled (or, when stubborn, until release is closed as well), and a
// channel that receives each call as it starts.
func blocking(clk *clock.Simulated, stubborn bool, release <-chan struct{}) (shard.Processor, chan *call) {
	started := make(chan *call, 16)
	return func(ctx context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		cl := &call{cancelled: make(chan struct{})}
		for _, j := range b.Jobs {
			cl.ids = append(cl.ids, j.ID)
		}
		started <- cl
		<-ctx.Done()
		cl.cause, cl.at = context.Cause(ctx), clk.Now()
		close(cl.cancelled)
		if stubborn {
			<-release
		}
		var fs []persistence.Failure
		for _, j := range b.Jobs {
			fs = append(fs, persistence.Failure{ID: j.ID, Error: ctx.Err().Error(), RetryAt: clk.Now()})
		}
		return fs, ctx.Err()
	}, started
}

func jobs(ids ...string) []persistence.Job {
	out := make([]persistence.Job, len(ids))
	for i, id := range ids {
		out[i] = persistence.Job{ID: id, RetryCount: -1, PerformAt: t0}
	}
	return out
}
