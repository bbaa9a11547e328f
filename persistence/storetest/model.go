package storetest

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// The model is docs/contract.md §3 written as plainly as possible: maps and
// sorting, no indexes. testModel drives the store and the model with the same
// random operations and compares every fetched batch and, after each step,
// everything the store shows.

var modelTests = []testCase{
	{"Model_RandomOperations", testModel, needNone},
}

type mJob struct {
	payloads map[string]float64
	rc       int
	at       float64
	err      string
}

type mMorgue struct {
	payloads map[string]float64
	updated  float64
	err      string
}

type mInFlight struct {
	id string
	j  *mJob
}

type model struct {
	hw        map[int]int64 // per shard: the last default score, in microseconds
	shards    int
	maxRetry  int
	queued    map[string]*mJob
	morgue    map[string]*mMorgue
	inflight  map[int][]mInFlight
	processed int64
	failed    int64
}

func mergeMin(dst map[string]float64, src map[string]float64) {
	for p, s := range src {
		if cur, ok := dst[p]; !ok || s < cur {
			dst[p] = s
		}
	}
}

// defaultScores returns the default score of each unscored payload of one
// Enqueue call, in send order (docs/contract.md §3.1): per shard, now in
// whole microseconds made strictly greater than the last default score, plus
// k µs for the k-th unscored payload of an id in the call.
func (m *model) defaultScores(now float64) func(id string) float64 {
	nowUS := int64(math.Floor(now*1e6 + 0.5))
	base := map[int]int64{}
	k := map[string]int64{}
	return func(id string) float64 {
		sh := persistence.ShardOf(id, m.shards)
		b, ok := base[sh]
		if !ok {
			b = max(nowUS, m.hw[sh]+1)
			base[sh] = b
		}
		us := b + k[id]
		k[id]++
		m.hw[sh] = max(m.hw[sh], us)
		return float64(us) / 1e6
	}
}

func (m *model) enqueue(id string, payload []byte, sc, at float64) {
	if q, ok := m.queued[id]; ok {
		mergeMin(q.payloads, map[string]float64{string(payload): sc})
		return
	}
	m.queued[id] = &mJob{payloads: map[string]float64{string(payload): sc}, rc: -1, at: at}
}

// requeue merges as "failed job + queued job".
func (m *model) requeue(id string, payloads map[string]float64, rc int, at float64, err string) {
	q, ok := m.queued[id]
	if !ok {
		q = &mJob{payloads: map[string]float64{}}
		m.queued[id] = q
	}
	mergeMin(q.payloads, payloads)
	q.rc, q.at, q.err = rc, at, ""
	if rc >= 0 {
		q.err = err
	}
}

func (m *model) morguePut(id string, payloads map[string]float64, err string, now float64) {
	e, ok := m.morgue[id]
	if !ok {
		e = &mMorgue{payloads: map[string]float64{}}
		m.morgue[id] = e
	}
	mergeMin(e.payloads, payloads)
	e.updated, e.err = now, err
}

// sorted returns payloads in score order, ties by bytes.
func sorted(ps map[string]float64) []persistence.Payload {
	out := make([]persistence.Payload, 0, len(ps))
	for p, s := range ps {
		out = append(out, persistence.Payload{Data: []byte(p), Score: s})
	}
	slices.SortFunc(out, func(a, b persistence.Payload) int {
		if c := cmp.Compare(a.Score, b.Score); c != 0 {
			return c
		}
		return bytes.Compare(a.Data, b.Data)
	})
	return out
}

// hasDue reports whether a job of shard is queued and due at now.
func (m *model) hasDue(shard int, now float64) bool {
	for id, j := range m.queued {
		if persistence.ShardOf(id, m.shards) == shard && j.at <= now {
			return true
		}
	}
	return false
}

func (m *model) fetch(shard, n int, now float64) []mInFlight {
	var due []string
	for id, j := range m.queued {
		if persistence.ShardOf(id, m.shards) == shard && j.at <= now {
			due = append(due, id)
		}
	}
	slices.SortFunc(due, func(a, b string) int {
		if c := cmp.Compare(m.queued[a].at, m.queued[b].at); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	if len(due) > n {
		due = due[:n]
	}
	var out []mInFlight
	for _, id := range due {
		out = append(out, mInFlight{id: id, j: m.queued[id]})
		delete(m.queued, id)
	}
	m.inflight[shard] = out
	return out
}

func (m *model) settle(shard int, fails map[string]persistence.Failure, now float64) (dead []string) {
	for _, f := range m.inflight[shard] {
		fl, ok := fails[f.id]
		if !ok {
			m.processed++
			continue
		}
		m.failed++
		rc := f.j.rc + 1
		if rc >= m.maxRetry {
			ps := sorted(f.j.payloads)
			m.morguePut(f.id, map[string]float64{string(ps[0].Data): ps[0].Score}, fl.Error, now)
			dead = append(dead, f.id)
			if len(ps) > 1 {
				rest := map[string]float64{}
				for _, p := range ps[1:] {
					rest[string(p.Data)] = p.Score
				}
				m.requeue(f.id, rest, -1, now, "")
			}
		} else {
			m.requeue(f.id, f.j.payloads, rc, persistence.UnixSeconds(fl.RetryAt), fl.Error)
		}
	}
	m.inflight[shard] = nil
	return dead
}

func (m *model) restore(shard int) {
	for _, f := range m.inflight[shard] {
		m.requeue(f.id, f.j.payloads, f.j.rc, f.j.at, f.j.err)
	}
	m.inflight[shard] = nil
}

// modelIDs are the ids the test draws from; few, so that merges are common.
var modelIDs = []string{"a", "b", "c", "d", "x:{y}", "日本", "nul\x00"}

// modelPayloads are few, so that equal payloads meet; the large ones make
// the Redis store keep an id's payloads partly inline and partly in its
// overflow structures.
var modelPayloads = [][]byte{[]byte("p0"), []byte("p1"), []byte("p2"), {0, 0xff, 0x10}, {},
	bytes.Repeat([]byte("a"), 3000), bytes.Repeat([]byte("b"), 3000), bytes.Repeat([]byte("c"), 1500)}

// testModel drives the store and a model of the contract side by side with
// random operations, and compares them after each. A store without Admin
// gets no operator actions (their steps move the clock instead).
func testModel(t *testing.T, h Harness) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("ORDERLY_MODEL_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (rerun with ORDERLY_MODEL_SEED=%d)", seed, seed)
	r := newModelRun(t, h, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	for step := range 400 {
		r.step = step
		r.checkPoll()
		op := r.do(r.rng.IntN(100))
		compareModel(t, r.e, r.m, fmt.Sprintf("step %d (%s)", step, op))
	}
}

// modelRun is one run of testModel: the store under test, its model, and
// an owner per shard.
type modelRun struct {
	t      *testing.T
	e      *env
	m      *model
	rng    *rand.Rand
	owners []*owner
	refs   []persistence.ShardRef
	admin  persistence.Admin // nil for a store without Admin
	step   int
}

func newModelRun(t *testing.T, h Harness, rng *rand.Rand) *modelRun {
	const shards = 2
	e := newEnv(t, h, shards)
	r := &modelRun{t: t, e: e, rng: rng, owners: make([]*owner, shards), refs: make([]persistence.ShardRef, shards),
		m: &model{hw: map[int]int64{}, shards: shards, maxRetry: 2, queued: map[string]*mJob{}, morgue: map[string]*mMorgue{}, inflight: map[int][]mInFlight{}}}
	r.admin, _ = e.s.(persistence.Admin)
	for sh := range shards {
		r.owners[sh] = e.own(sh)
		r.owners[sh].maxRetry = r.m.maxRetry
		r.refs[sh] = persistence.ShardRef{Queue: e.queue, Shard: sh}
	}
	return r
}

func (r *modelRun) pick() string { return modelIDs[r.rng.IntN(len(modelIDs))] }

// checkPoll checks that the idle poll never leaves out a shard with due
// jobs.
func (r *modelRun) checkPoll() {
	now := r.e.now()
	polled, err := r.e.s.PollShards(r.e.ctx, r.refs)
	require.NoError(r.t, err)
	for sh, p := range polled {
		require.True(r.t, p || !r.m.hasDue(sh, now), "step %d: shard %d has due jobs and the poll left it out", r.step, sh)
	}
}

// do runs the operation n (0 to 99) draws, and names it.
func (r *modelRun) do(n int) string {
	switch {
	case n < 35:
		return r.enqueue()
	case n < 70:
		return r.advance()
	case n < 80 || (n < 96 && r.admin == nil):
		r.e.clock.Advance(time.Duration(r.rng.IntN(3000)) * time.Millisecond)
		return "clock"
	case n < 85:
		return r.requeueMorgue()
	case n < 88:
		return r.performAllNow()
	case n < 90:
		return r.killFailed()
	case n < 93:
		return r.deleteJob()
	case n < 96:
		return r.deleteMorgue()
	default:
		return r.reacquire()
	}
}

func (r *modelRun) enqueue() string {
	now := r.e.now()
	var jobs []persistence.NewJob
	calls := r.m.defaultScores(now)
	for range 1 + r.rng.IntN(3) {
		j := persistence.NewJob{ID: r.pick(), Payload: modelPayloads[r.rng.IntN(len(modelPayloads))]}
		var sc float64
		if r.rng.IntN(3) > 0 {
			sc = float64(r.rng.IntN(20))
			j.Score = &sc
		} else {
			sc = calls(j.ID)
		}
		at := now
		if r.rng.IntN(2) == 0 {
			j.PerformAt = r.e.at(time.Duration(r.rng.IntN(11)-5) * time.Second)
			at = persistence.UnixSeconds(j.PerformAt)
		}
		jobs = append(jobs, j)
		r.m.enqueue(j.ID, j.Payload, sc, at)
	}
	r.e.enqueue(jobs...)
	return "enqueue"
}

// advance settles a shard's batch, failing some of its ids at random, and
// fetches the next one.
func (r *modelRun) advance() string {
	t, m, step, now := r.t, r.m, r.step, r.e.now()
	sh := r.rng.IntN(len(r.owners))
	o := r.owners[sh]
	fails := map[string]persistence.Failure{}
	var list []persistence.Failure
	for _, f := range m.inflight[sh] {
		if r.rng.IntN(2) == 0 {
			fl := o.fail(f.id, "err-"+strconv.Itoa(step), time.Duration(r.rng.IntN(4))*time.Second)
			fails[f.id] = fl
			list = append(list, fl)
		}
	}
	if r.rng.IntN(10) == 0 {
		list = append(list, o.fail("not-in-batch", "ignored", 0))
	}
	wantDead := m.settle(sh, fails, now)
	n := 1 + r.rng.IntN(3)
	want := m.fetch(sh, n, now)
	res := o.next(n, list...)
	var gotDead []string
	for _, d := range res.Dead {
		gotDead = append(gotDead, d.ID)
	}
	require.ElementsMatch(t, wantDead, gotDead, "step %d: dead", step)
	var got []persistence.Job
	if res.Batch != nil {
		got = res.Batch.Jobs
	}
	require.Len(t, got, len(want), "step %d: batch %v, want %d jobs", step, ids(res.Batch), len(want))
	for i, w := range want {
		g := got[i]
		require.Equal(t, w.id, g.ID, "step %d: batch position %d", step, i)
		require.Equal(t, pl(sorted(w.j.payloads)), pl(g.Payloads), "step %d: %q payloads", step, w.id)
		require.Equal(t, w.j.rc, g.RetryCount, "step %d: %q retry_count", step, w.id)
		require.Equal(t, w.j.at, persistence.UnixSeconds(g.PerformAt), "step %d: %q perform_at", step, w.id)
		require.Equal(t, w.j.err, g.Error, "step %d: %q error", step, w.id)
	}
	return fmt.Sprintf("advance shard %d", sh)
}

func (r *modelRun) requeueMorgue() string {
	id, now := r.pick(), r.e.now()
	n, err := r.admin.RequeueMorgue(r.e.ctx, r.e.queue, []string{id})
	require.NoError(r.t, err)
	want := 0
	if me, ok := r.m.morgue[id]; ok {
		r.m.requeue(id, me.payloads, -1, now, "")
		delete(r.m.morgue, id)
		want = 1
	}
	require.Equal(r.t, want, n, "step %d", r.step)
	return "morgue requeue"
}

func (r *modelRun) performAllNow() string {
	now := r.e.now()
	_, err := r.admin.PerformAllNow(r.e.ctx, r.e.queue)
	require.NoError(r.t, err)
	for _, j := range r.m.queued {
		if j.at > now {
			j.at = now
		}
	}
	return "perform all now"
}

func (r *modelRun) killFailed() string {
	now := r.e.now()
	_, err := r.admin.KillFailed(r.e.ctx, r.e.queue)
	require.NoError(r.t, err)
	for id, j := range r.m.queued {
		if j.rc >= 0 {
			r.m.morguePut(id, j.payloads, j.err, now)
			delete(r.m.queued, id)
		}
	}
	return "kill failed"
}

func (r *modelRun) deleteJob() string {
	id := r.pick()
	_, err := r.admin.DeleteJob(r.e.ctx, r.e.queue, id)
	require.NoError(r.t, err)
	delete(r.m.queued, id)
	return "delete job"
}

func (r *modelRun) deleteMorgue() string {
	id := r.pick()
	_, err := r.admin.DeleteMorgue(r.e.ctx, r.e.queue, []string{id})
	require.NoError(r.t, err)
	delete(r.m.morgue, id)
	return "morgue delete"
}

// reacquire releases a shard and acquires it again: its in-flight batch
// goes back into the queue.
func (r *modelRun) reacquire() string {
	sh := r.rng.IntN(len(r.owners))
	require.NoError(r.t, r.e.s.ReleaseShard(r.e.ctx, r.owners[sh].lease))
	r.m.restore(sh)
	r.owners[sh] = r.e.own(sh)
	r.owners[sh].maxRetry = r.m.maxRetry
	return fmt.Sprintf("release and reacquire shard %d", sh)
}

func compareModel(t *testing.T, e *env, m *model, where string) {
	t.Helper()
	for _, id := range modelIDs {
		info, err := e.s.GetJob(e.ctx, e.queue, id)
		want, queued := m.queued[id]
		inFlight := false
		for _, fl := range m.inflight {
			for _, f := range fl {
				inFlight = inFlight || f.id == id
			}
		}
		if !queued && !inFlight {
			// Nothing queued or in flight: known by its morgue entry only
			// (docs/contract.md §3.9), or unknown.
			if _, dead := m.morgue[id]; dead {
				require.NoError(t, err, "%s: %q is in the morgue", where, id)
				require.Nil(t, info.Queued, "%s: %q", where, id)
				require.Nil(t, info.InFlight, "%s: %q", where, id)
				require.NotNil(t, info.Morgue, "%s: %q", where, id)
				continue
			}
			require.ErrorIs(t, err, persistence.ErrNotFound, "%s: %q", where, id)
			continue
		}
		require.NoError(t, err, "%s: %q", where, id)
		require.Equal(t, inFlight, info.InFlight != nil, "%s: %q in flight", where, id)
		if !queued {
			require.Nil(t, info.Queued, "%s: %q", where, id)
			continue
		}
		require.NotNil(t, info.Queued, "%s: %q should be queued", where, id)
		got := info.Queued
		require.Equal(t, pl(sorted(want.payloads)), pl(got.Payloads), "%s: %q payloads", where, id)
		require.Equal(t, want.rc, got.RetryCount, "%s: %q retry_count", where, id)
		require.Equal(t, want.at, persistence.UnixSeconds(got.PerformAt), "%s: %q perform_at", where, id)
		require.Equal(t, want.err, got.Error, "%s: %q error", where, id)
	}
	st := e.stats()
	var fresh, busy int64
	for _, j := range m.queued {
		if j.rc == -1 {
			fresh++
		}
	}
	for _, fl := range m.inflight {
		busy += int64(len(fl))
	}
	require.Equal(t, int64(len(m.queued)), st.Length, "%s: length", where)
	require.Equal(t, fresh, st.Fresh, "%s: fresh", where)
	require.Equal(t, int64(len(m.morgue)), st.MorgueLength, "%s: morgue_length", where)
	require.Equal(t, busy, st.Busy, "%s: busy", where)
	require.Equal(t, m.processed, st.Processed, "%s: processed", where)
	require.Equal(t, m.failed, st.Failed, "%s: failed", where)

	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Limit: 100})
	require.NoError(t, err)
	require.Len(t, page.Entries, len(m.morgue), "%s: morgue", where)
	for _, got := range page.Entries {
		want := m.morgue[got.ID]
		require.NotNil(t, want, "%s: unexpected morgue entry %q", where, got.ID)
		require.Equal(t, pl(sorted(want.payloads)), pl(got.Payloads), "%s: morgue %q", where, got.ID)
		require.Equal(t, want.updated, persistence.UnixSeconds(got.UpdatedAt), "%s: morgue %q updated_at", where, got.ID)
		require.Equal(t, want.err, got.Error, "%s: morgue %q error", where, got.ID)
	}
}
