package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// The deduplication window (docs/contract.md §3.12).

var dedupTests = []testCase{
	{"Rule12_DuplicateWithinWindowNotStored", testDedupWithinWindow, needNone},
	{"Rule12_DuplicateAfterProcessing", testDedupAfterProcessing, needNone},
	{"Rule12_KeyAcceptedAfterWindow", testDedupAfterWindow, needNone},
	{"Rule12_WindowOffStoresEveryJob", testDedupWindowOff, needNone},
	{"Rule12_LastRegistrationWins", testDedupLastRegistration, needNone},
}

// dedupEnv is an env whose queue has a dedup window.
func dedupEnv(t *testing.T, h Harness, shards int, window time.Duration) *env {
	e := newEnv(t, h, shards)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: shards, DedupWindow: window}))
	return e
}

// enqueueDups enqueues jobs and checks the duplicates reported, when the
// store reports them (persistence.EnqueueReporter; the store of a case
// without that role deduplicates all the same, which the case checks).
func (e *env) enqueueDups(want int, jobs ...persistence.NewJob) {
	e.t.Helper()
	r, ok := e.s.(persistence.EnqueueReporter)
	if !ok {
		e.enqueue(jobs...)
		return
	}
	res, err := r.EnqueueReport(e.ctx, e.queue, jobs)
	require.NoError(e.t, err)
	require.Equal(e.t, want, res.Duplicates, "duplicates reported")
}

// keyed is a job with a dedup key.
func keyed(id, payload, key string) persistence.NewJob {
	return persistence.NewJob{ID: id, Payload: []byte(payload), DedupKey: key}
}

// docs/contract.md §3.12: a key seen with the same id within the window
// makes the job a duplicate, acknowledged and not stored, within one call
// and across calls; the key of another id is another key, and jobs
// without a key are not affected.
func testDedupWithinWindow(t *testing.T, h Harness) {
	e := dedupEnv(t, h, 4, time.Minute)
	e.enqueueDups(1, keyed("a", "1", "k1"), keyed("a", "2", "k1"), keyed("b", "3", "k2"))
	e.clock.Advance(30 * time.Second)
	e.enqueueDups(2, keyed("a", "4", "k1"), keyed("b", "5", "k2"), keyed("c", "7", "k2"),
		persistence.NewJob{ID: "a", Payload: []byte("6")})
	require.Equal(t, []string{"1", "6"}, payloadData(e.get("a").Payloads))
	require.Equal(t, []string{"3"}, payloadData(e.get("b").Payloads))
	require.Equal(t, []string{"7"}, payloadData(e.get("c").Payloads), "the key of another id is another key")
	require.Equal(t, int64(3), e.stats().Length)
}

// docs/contract.md §3.12: the window runs from the key's first enqueue,
// whatever happened to its job: processed, the key is still a duplicate.
func testDedupAfterProcessing(t *testing.T, h Harness) {
	e := dedupEnv(t, h, 1, time.Minute)
	e.enqueueDups(0, keyed("a", "1", "k"))
	o := e.own(0)
	require.Equal(t, []string{"a"}, ids(o.next(1).Batch))
	require.Equal(t, 1, o.next(0).Processed)
	e.enqueueDups(1, keyed("a", "1", "k"))
	require.Nil(t, e.get("a"))
	require.Nil(t, o.next(1).Batch)
}

// docs/contract.md §3.12: once the window has passed since the key was
// accepted, it is accepted again (and starts a new window); the window
// does not slide with duplicates.
func testDedupAfterWindow(t *testing.T, h Harness) {
	e := dedupEnv(t, h, 2, time.Minute)
	e.enqueueDups(0, keyed("a", "1", "k"))
	e.clock.Advance(59 * time.Second)
	e.enqueueDups(1, keyed("a", "2", "k"))
	e.clock.Advance(time.Second)
	e.enqueueDups(0, keyed("a", "3", "k"))
	require.Equal(t, []string{"1", "3"}, payloadData(e.get("a").Payloads))
	e.clock.Advance(30 * time.Second)
	e.enqueueDups(1, keyed("a", "4", "k"))
	// Many keys, all lapsed: each is accepted again.
	var jobs []persistence.NewJob
	for i := range 50 {
		jobs = append(jobs, keyed("m", string(rune('A'+i)), "key-"+string(rune('A'+i))))
	}
	e.enqueueDups(0, jobs...)
	e.clock.Advance(2 * time.Minute)
	e.enqueueDups(0, jobs...)
	require.Len(t, e.get("m").Payloads, 50)
}

// docs/contract.md §3.12: on a queue without a window a dedup key is
// ignored: every job is stored.
func testDedupWindowOff(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueueDups(0, keyed("a", "1", "k"), keyed("a", "2", "k"))
	e.enqueueDups(0, keyed("b", "3", "k"))
	require.Equal(t, []string{"1", "2"}, payloadData(e.get("a").Payloads))
	require.NotNil(t, e.get("b"))
}

// docs/contract.md §3.12: the window is the last registration's; a
// registration without one turns it off.
func testDedupLastRegistration(t *testing.T, h Harness) {
	e := dedupEnv(t, h, 2, time.Hour)
	e.enqueueDups(0, keyed("a", "1", "k"))
	e.clock.Advance(2 * time.Minute)
	e.enqueueDups(1, keyed("a", "2", "k"))
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: 2}))
	e.enqueueDups(0, keyed("a", "3", "k"))
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: 2, DedupWindow: time.Second}))
	e.enqueueDups(0, keyed("x", "4", "fresh"))
	e.enqueueDups(1, keyed("x", "5", "fresh"))
	e.clock.Advance(time.Second)
	e.enqueueDups(0, keyed("x", "6", "fresh"))
}
