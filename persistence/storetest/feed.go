package storetest

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// The change feed of stateful queues (docs/contract.md §11).

var feedTests = []testCase{
	{"Feed_ChangesInVersionOrder", testFeedChangesInOrder, needState | needFeed},
	{"Feed_Bounded", testFeedBounded, needState | needFeed},
	{"Feed_OffPublishesNothing", testFeedOff, needState | needFeed},
	{"Feed_OutsideWriteBeforeAnyOwner", testFeedOutsideWriteBeforeAnyOwner, needState | needFeed},
}

// feeding settles with state writes under a feed of maxLen and fetches up
// to n; the first call of the owner asks for the outbox (CheckOutbox), as a
// shard actor's does, which also records the feed for outside writes.
func (o *owner) feeding(n, maxLen int, writes []persistence.StateWrite) persistence.AdvanceResult {
	o.e.t.Helper()
	var settle int64
	if o.cur != nil {
		settle = o.cur.Seq
	}
	o.seq++
	res, err := o.e.s.Advance(o.e.ctx, o.lease, persistence.AdvanceRequest{Settle: settle, Fetch: n, NextSeq: o.seq,
		MaxRetryCount: o.maxRetry, Stateful: true, StateWrites: writes, FeedMaxLen: maxLen, CheckOutbox: o.seq == 1})
	require.NoError(o.e.t, err)
	o.cur = res.Batch
	return res
}

// feed reads the whole feed of the env's queue.
func (e *env) feed() []persistence.FeedEntry {
	e.t.Helper()
	var all []persistence.FeedEntry
	from := persistence.FeedOldest
	for {
		got, next, err := e.feeds().ReadFeed(e.ctx, e.queue, from, 3, 0)
		require.NoError(e.t, err)
		if len(got) == 0 {
			return all
		}
		all = append(all, got...)
		from = next
	}
}

func feedShape(es []persistence.FeedEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		s := e.ID + "@" + trimFloat(float64(e.Version)) + ":"
		switch {
		case e.Deleted:
			s += "deleted"
		case e.Hash != "":
			s += "sha1:" + e.Hash
		default:
			s += string(e.Data)
		}
		out[i] = s
	}
	return out
}

// §11: handler commits, outside compare-and-set writes and deletes (both
// kinds) appear on the feed once relayed, in version order per id, with
// the state (or its SHA-1 when big) and the commit time.
func testFeedChangesInOrder(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1), job("b", "1", 1))
	o := e.own(0)
	o.feeding(2, 100, nil)
	res := o.feeding(0, 100, []persistence.StateWrite{set("a", "h1"), set("b", "h1")})
	require.Equal(t, 2, res.Outbox, "two changes wait for the relay")
	require.Empty(t, e.feed(), "published by the relay")

	// An outside write relays the outbox itself.
	_, err := e.states().SetState(e.ctx, e.queue, "a", []byte("outside"), 1, 0)
	require.NoError(t, err)
	_, err = e.states().DeleteState(e.ctx, e.queue, "b", 1)
	require.NoError(t, err)
	big := strings.Repeat("x", persistence.FeedInlineBytes+1)
	e.enqueue(job("a", "2", 2))
	o.feeding(1, 100, nil)
	o.feeding(0, 100, []persistence.StateWrite{set("a", big)})
	e.enqueue(job("a", "3", 3))
	o.feeding(1, 100, nil)
	res = o.feeding(0, 100, []persistence.StateWrite{{ID: "a", Delete: true}})
	require.Positive(t, res.Outbox)
	relayed, _ := e.relay()
	require.Equal(t, 2, relayed)

	sum := sha1.Sum([]byte(big))
	got := e.feed()
	require.Equal(t, []string{"a@1:h1", "b@1:h1", "a@2:outside", "b@2:deleted", "a@3:sha1:" + hex.EncodeToString(sum[:]), "a@4:deleted"},
		feedShape(got))
	for _, en := range got {
		require.WithinDuration(t, e.clock.Now(), en.At, time.Second)
		require.NotEmpty(t, en.Pos)
	}

	// From a position: what follows it; from "$": only what comes next.
	after, next, err := e.feeds().ReadFeed(e.ctx, e.queue, got[3].Pos, 10, 0)
	require.NoError(t, err)
	require.Equal(t, feedShape(got[4:]), feedShape(after))
	require.Equal(t, got[5].Pos, next)
	none, tail, err := e.feeds().ReadFeed(e.ctx, e.queue, persistence.FeedNew, 10, 0)
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = e.states().SetState(e.ctx, e.queue, "a", []byte("again"), 4, 0)
	require.NoError(t, err)
	fresh, _, err := e.feeds().ReadFeed(e.ctx, e.queue, tail, 10, time.Second)
	require.NoError(t, err)
	require.Equal(t, []string{"a@5:again"}, feedShape(fresh))

	_, _, err = e.feeds().ReadFeed(e.ctx, e.queue, "not-a-position", 10, 0)
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	_, _, err = e.feeds().ReadFeed(e.ctx, "nope", "0", 10, 0)
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
}

// §11: the feed keeps at most feed_max_len entries, the latest.
func testFeedBounded(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "0", 0))
	o := e.own(0)
	o.feeding(1, 3, nil)
	o.feeding(0, 3, []persistence.StateWrite{set("a", "1")})
	for v := int64(1); v < 8; v++ {
		_, err := e.states().SetState(e.ctx, e.queue, "a", []byte{byte('1' + v)}, v, 0)
		require.NoError(t, err)
	}
	require.Equal(t, []string{"a@6:6", "a@7:7", "a@8:8"}, feedShape(e.feed()))
}

// A queue whose feed is off (FeedMaxLen 0) publishes nothing and writes
// nothing to the outbox.
func testFeedOff(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "0", 0))
	o := e.own(0)
	o.feeding(1, 0, nil)
	res := o.feeding(0, 0, []persistence.StateWrite{set("a", "1")})
	require.Zero(t, res.Outbox)
	_, err := e.states().SetState(e.ctx, e.queue, "a", []byte("2"), 1, 0)
	require.NoError(t, err)
	require.Empty(t, e.feed())
}

// §11: the queue's registration records its feed bound, so an outside
// compare-and-set publishes its change on a shard no owner ever served; a
// registration with the feed off publishes nothing.
func testFeedOutsideWriteBeforeAnyOwner(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: 1, Stateful: true, FeedMaxLen: 2}))
	for v := range int64(3) {
		_, err := e.states().SetState(e.ctx, e.queue, "a", []byte("v"+trimFloat(float64(v+1))), v, 0)
		require.NoError(t, err)
	}
	require.Equal(t, []string{"a@2:v2", "a@3:v3"}, feedShape(e.feed()), "published, within the registered bound")

	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: 1, Stateful: true, FeedMaxLen: 0}))
	_, err := e.states().DeleteState(e.ctx, e.queue, "a", 3)
	require.NoError(t, err)
	require.Equal(t, []string{"a@2:v2", "a@3:v3"}, feedShape(e.feed()), "the feed is off now")
}
