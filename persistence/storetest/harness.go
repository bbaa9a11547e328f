// Package storetest is the conformance suite of persistence.Store: every
// implementation (the Redis store on a real server and on the embedded
// in-memory server) passes the same tests, one or more per rule of
// docs/contract.md §3, plus lease fencing, listings, bad input, the queue
// controls of §9, the stateful queues of §11 and a model-based property
// test. Each file holds the cases of one section.
//
// A store under test needs what a node needs (persistence.NodeStore) and
// the reads the cases check results with (persistence.Inspector): the
// suite's Store. The cases of the other roles (persistence.Admin,
// StateStore, FeedStore) are skipped for a store that lacks them, so that a
// new implementation can pass the suite role by role.
package storetest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// Store is what the suite needs of every store under test; a store may
// also implement persistence.Admin, persistence.StateStore and
// persistence.FeedStore, whose cases run only then.
type Store interface {
	persistence.NodeStore
	persistence.Inspector
}

// Harness adapts a store implementation to the suite.
type Harness struct {
	// New returns a store on a fresh, empty namespace that reads time from
	// now; with now nil, the store reads its own clock, as in production.
	New func(t *testing.T, now func() time.Time) Store
	// Elapse lets d of server time pass, so that lease TTLs run out (a real
	// server sleeps; an in-memory one fast-forwards).
	Elapse func(t *testing.T, d time.Duration)
	// Light shrinks the tests that load one id with very many payloads, for
	// slow in-memory servers.
	Light bool
	// Lossy, when set, returns a store on a server of its own, with save,
	// which marks the server's state, and lose, which brings the server back
	// to the last mark, as a restart that lost its last writes (or a
	// promoted replica that lagged) would. The tests that need it are
	// skipped without it.
	Lossy func(t *testing.T, now func() time.Time) (s Store, save, lose func())
	// Upgrade, when set, returns a store of the previous release's storage
	// layout and a store of this release on one fresh namespace, to test the
	// upgrade. The tests that need it are skipped without it.
	Upgrade func(t *testing.T, now func() time.Time) (old, cur Store)

	// needs is the optional roles the running case declared (Run sets it).
	needs role
}

// role is a set of the optional roles of persistence.Store.
type role uint8

// The optional roles a case may need.
const (
	needAdmin    role = 1 << iota // persistence.Admin
	needState                     // persistence.StateStore
	needFeed                      // persistence.FeedStore
	needFinished                  // persistence.FinishedStore
	needReshard                   // persistence.Resharder

	needNone role = 0 // the case needs no optional role
)

// rolesOf returns the optional roles s implements.
func rolesOf(s Store) role {
	var r role
	if _, ok := s.(persistence.Admin); ok {
		r |= needAdmin
	}
	if _, ok := s.(persistence.StateStore); ok {
		r |= needState
	}
	if _, ok := s.(persistence.FeedStore); ok {
		r |= needFeed
	}
	if _, ok := s.(persistence.FinishedStore); ok {
		r |= needFinished
	}
	if _, ok := s.(persistence.Resharder); ok {
		r |= needReshard
	}
	return r
}

// String names the roles of r.
func (r role) String() string {
	var names []string
	for _, n := range []struct {
		r    role
		name string
	}{{needAdmin, "Admin"}, {needState, "StateStore"}, {needFeed, "FeedStore"}, {needFinished, "FinishedStore"}, {needReshard, "Resharder"}} {
		if r&n.r != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ", ")
}

// epoch is the suite's starting time: a round number of seconds, so that
// times in failure messages are easy to read.
var epoch = time.Unix(1_700_000_000, 0)

// env is one test's store, clock and queue.
type env struct {
	t      *testing.T
	h      Harness
	s      Store
	clock  *clock.Simulated
	ctx    context.Context
	queue  string
	shards int
}

func newEnv(t *testing.T, h Harness, shards int) *env {
	t.Helper()
	clk := clock.NewSimulated(epoch)
	e := &env{t: t, h: h, s: h.New(t, clk.Now), clock: clk, ctx: context.Background(), queue: "q", shards: shards}
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: shards}))
	return e
}

// admin returns the store's Admin role, which the case must have declared
// (needAdmin), so that a store without it skips the case.
func (e *env) admin() persistence.Admin {
	e.t.Helper()
	require.NotZero(e.t, e.h.needs&needAdmin, "the case calls Admin without declaring needAdmin")
	return e.s.(persistence.Admin)
}

// states returns the store's StateStore role, which the case must have
// declared (needState).
func (e *env) states() persistence.StateStore {
	e.t.Helper()
	require.NotZero(e.t, e.h.needs&needState, "the case calls StateStore without declaring needState")
	return e.s.(persistence.StateStore)
}

// feeds returns the store's FeedStore role, which the case must have
// declared (needFeed).
func (e *env) feeds() persistence.FeedStore {
	e.t.Helper()
	require.NotZero(e.t, e.h.needs&needFeed, "the case calls FeedStore without declaring needFeed")
	return e.s.(persistence.FeedStore)
}

// now returns the clock as store seconds.
func (e *env) now() float64 { return persistence.UnixSeconds(e.clock.Now()) }

// at returns the clock plus d as a time.
func (e *env) at(d time.Duration) time.Time { return e.clock.Now().Add(d) }

func score(v float64) *float64 { return &v }

// job builds a NewJob with a payload and a score.
func job(id, payload string, sc float64) persistence.NewJob {
	return persistence.NewJob{ID: id, Payload: []byte(payload), Score: score(sc)}
}

func (e *env) enqueue(jobs ...persistence.NewJob) {
	e.t.Helper()
	require.NoError(e.t, e.s.Enqueue(e.ctx, e.queue, jobs))
}

// get returns the queued entry of id, or nil.
func (e *env) get(id string) *persistence.Job {
	e.t.Helper()
	info, err := e.s.GetJob(e.ctx, e.queue, id)
	if err != nil {
		require.ErrorIs(e.t, err, persistence.ErrNotFound)
		return nil
	}
	return info.Queued
}

func (e *env) stats() persistence.QueueStats {
	e.t.Helper()
	st, err := e.s.Stats(e.ctx, e.queue)
	require.NoError(e.t, err)
	require.Len(e.t, st, 1)
	return st[0]
}

// owner drives one shard like a shard actor: it holds the lease and the
// current batch.
type owner struct {
	e        *env
	lease    persistence.Lease
	seq      int64
	cur      *persistence.Batch
	maxRetry int
	restored int
	// retain, maxFinished and results go into each AdvanceRequest
	// (RetainFinished, MaxFinished, Results); results is cleared after
	// each call.
	retain      time.Duration
	maxFinished int
	results     map[string][]byte
}

func (e *env) own(shard int) *owner {
	e.t.Helper()
	lease, restored, err := e.s.AcquireShard(e.ctx, persistence.ShardRef{Queue: e.queue, Shard: shard}, "node-a", time.Minute)
	require.NoError(e.t, err)
	return &owner{e: e, lease: lease, maxRetry: 25, restored: restored}
}

// next settles the current batch (failing the given ids) and fetches up to n.
func (o *owner) next(n int, failures ...persistence.Failure) persistence.AdvanceResult {
	o.e.t.Helper()
	res, err := o.advance(n, failures...)
	require.NoError(o.e.t, err)
	return res
}

func (o *owner) advance(n int, failures ...persistence.Failure) (persistence.AdvanceResult, error) {
	var settle int64
	if o.cur != nil {
		settle = o.cur.Seq
	}
	o.seq++
	res, err := o.e.s.Advance(o.e.ctx, o.lease, persistence.AdvanceRequest{
		Settle: settle, Failures: failures, Fetch: n, NextSeq: o.seq, MaxRetryCount: o.maxRetry,
		RetainFinished: o.retain, MaxFinished: o.maxFinished, Results: o.results,
	})
	o.results = nil
	if err == nil {
		o.cur = res.Batch
	}
	return res, err
}

// fail is a Failure of id retrying after d.
func (o *owner) fail(id, msg string, d time.Duration) persistence.Failure {
	return persistence.Failure{ID: id, Error: msg, RetryAt: o.e.at(d)}
}

// ids returns the ids of a batch in order.
func ids(b *persistence.Batch) []string {
	if b == nil {
		return nil
	}
	out := make([]string, len(b.Jobs))
	for i, j := range b.Jobs {
		out[i] = j.ID
	}
	return out
}

// pl renders payloads as "data@score" for compact comparisons.
func pl(ps []persistence.Payload) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p.Data) + "@" + trimFloat(p.Score)
	}
	return out
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// payloadData returns the payloads' bytes as strings, in order.
func payloadData(ps []persistence.Payload) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p.Data)
	}
	return out
}

// jobOf returns the job of id in a batch, or nil.
func jobOf(b *persistence.Batch, id string) *persistence.Job {
	if b == nil {
		return nil
	}
	for i := range b.Jobs {
		if b.Jobs[i].ID == id {
			return &b.Jobs[i]
		}
	}
	return nil
}
