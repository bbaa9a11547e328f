package history

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

func TestCheckFindsEachBreach(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p := func(d string, s float64) Payload { return Payload{Data: d, Score: s} }
	calls := []Call{
		{ID: "a", Start: at(0), End: at(10), Payloads: []Payload{p("a1", 1), p("a2", 2)}, Acked: true},
		{ID: "a", Start: at(5), End: at(20), Payloads: []Payload{p("a3", 3)}, Acked: true},             // overlaps
		{ID: "b", Start: at(0), End: at(1), Payloads: []Payload{p("b2", 2)}, Acked: true},              // acked first
		{ID: "b", Start: at(2), End: at(3), Payloads: []Payload{p("b1", 1)}, Acked: true},              // lower score later
		{ID: "c", Start: at(0), End: at(1), Payloads: []Payload{p("c2", 2), p("c1", 1)}, Acked: false}, // unsorted
		{ID: "d", Start: at(0), End: at(1), Payloads: []Payload{p("d1", 1)}, Acked: true},
		{ID: "d", Start: at(2), End: at(3), Payloads: []Payload{p("d1", 1), p("d2", 2)}, Acked: true}, // redelivery: fine
	}
	enq := map[string][]string{"a": {"a1", "a2", "a3"}, "b": {"b1", "b2"}, "c": {"c1", "c2"}, "d": {"d1", "d2"}, "e": {"e1"}}
	rep := Check(calls, enq, map[string][]string{"c": {"c1"}})
	require.Len(t, rep.Overlaps, 1)
	require.Len(t, rep.OrderViolations, 2, rep.String())
	require.Equal(t, []string{`id "c": payload "c2" neither acknowledged, discarded nor in the morgue`, `id "e": payload "e1" neither acknowledged, discarded nor in the morgue`}, rep.Lost)
	require.Equal(t, 1, rep.Duplicates)
	require.False(t, rep.OK())

	ok := Check(calls[5:], map[string][]string{"d": {"d1", "d2"}}, nil)
	require.True(t, ok.OK(), ok.String())
}

// A payload acknowledged twice is fine after an ownership change (a higher
// epoch) and a breach under the same lease.
func TestCheckDuplicatesNeedAnOwnershipChange(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	call := func(ms int, delivery string) Call {
		return Call{ID: "a", Delivery: delivery, Start: at(ms), End: at(ms + 1), Payloads: []Payload{{Data: "a1", Score: 1}}, Acked: true}
	}
	enq := map[string][]string{"a": {"a1"}}

	rep := Check([]Call{call(0, "q/3/7/10"), call(5, "q/3/8/1")}, enq, nil)
	require.True(t, rep.OK(), rep.String())
	require.Equal(t, 1, rep.Duplicates)

	rep = Check([]Call{call(0, "q/3/7/10"), call(5, "q/3/7/11")}, enq, nil)
	require.False(t, rep.OK())
	require.Equal(t, []string{`id "a": payload "a1" acknowledged in q/3/7/10 and delivered again in q/3/7/11, under the same lease`}, rep.Unexplained)
	require.Contains(t, rep.String(), "1 duplicate acknowledgements, 1 redeliveries not after an ownership change")

	// Without epochs in the delivery names there is nothing to compare.
	rep = Check([]Call{call(0, ""), call(5, "")}, enq, nil)
	require.True(t, rep.OK(), rep.String())
}

// Outcomes the handler chose (§3.11): a discarded payload is accounted
// for, one answered dead must be in the morgue, a snoozed one must come
// back; none is delivered again under the lease that settled it, and a
// discarded or dead payload counts for the order of what follows.
func TestCheckOutcomes(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	call := func(ms int, delivery, outcome string, data string, score float64) Call {
		return Call{ID: "a", Delivery: delivery, Start: at(ms), End: at(ms + 1), Outcome: outcome,
			Payloads: []Payload{{Data: data, Score: score}}, Acked: outcome == ""}
	}
	enq := map[string][]string{"a": {"s", "x", "d"}}
	calls := []Call{call(0, "q/0/1/1", Snoozed, "s", 1), call(5, "q/0/1/2", "", "s", 1),
		call(10, "q/0/1/3", Discarded, "x", 2), call(15, "q/0/1/4", Dead, "d", 3)}
	rep := Check(calls, enq, map[string][]string{"a": {"d"}})
	require.True(t, rep.OK(), rep.String())
	require.Equal(t, []int{1, 1, 1, 1}, []int{rep.Acked, rep.Snoozed, rep.Discarded, rep.Dead})

	rep = Check(calls[:1], enq, nil) // only snoozed: s, x and d lost
	require.Len(t, rep.Lost, 3, rep.String())
	rep = Check(calls, enq, nil)
	require.Equal(t, []string{`id "a": payload "d" answered dead but not in the morgue`,
		`id "a": payload "d" neither acknowledged, discarded nor in the morgue`}, rep.Lost)

	again := append(slices.Clone(calls), call(20, "q/0/1/5", "", "x", 2))
	rep = Check(again, enq, map[string][]string{"a": {"d"}})
	require.Equal(t, []string{`id "a": payload "x" discarded in q/0/1/3 and delivered again in q/0/1/5, under the same lease`}, rep.Unexplained)
	again[len(again)-1].Delivery = "q/0/2/1" // after an ownership change: fine
	require.True(t, Check(again, enq, map[string][]string{"a": {"d"}}).OK())

	late := append(slices.Clone(calls), call(20, "q/0/1/5", "", "early", 0))
	rep = Check(late, map[string][]string{"a": {"s", "x", "d", "early"}}, map[string][]string{"a": {"d"}})
	require.Equal(t, []string{`id "a": payload "early" (score 0) acknowledged after score 3`}, rep.OrderViolations)
}

func TestEpoch(t *testing.T) {
	for in, want := range map[string]int64{"emails/3/7/1042": 7, "a/b/0/2/9": 2} {
		got, ok := Epoch(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "q/3/x/1", "3/7/1"} {
		_, ok := Epoch(in)
		require.False(t, ok, in)
	}
}

// The producer records what was acknowledged, and the payloads of failed
// rounds as unsure; what it records is what Check takes.
func TestProducer(t *testing.T) {
	var calls atomic.Int32
	p := Produce(3, time.Millisecond, func(ctx context.Context, jobs []persistence.NewJob) error {
		require.Len(t, jobs, 3)
		if calls.Add(1)%2 == 0 {
			return errors.New("refused")
		}
		return nil
	})
	require.Eventually(t, func() bool { return calls.Load() >= 6 }, 5*time.Second, time.Millisecond)
	p.Stop()
	n := int(calls.Load())
	enq, unsure := p.Enqueued(), p.Unsure()
	require.Equal(t, n/2, p.Refused())
	require.Len(t, enq, 3)
	require.Len(t, enq["order-1"], n-n/2)
	require.Equal(t, `"order-1/0"`, enq["order-1"][0], "round 0 was acknowledged")
	require.True(t, unsure[`"order-1/1"`], "round 1 was refused")
	require.Len(t, unsure, 3*(n/2))
	p.Stop() // twice is fine
}

// A keyed producer repeats the keyed jobs of the previous acknowledged
// round, records them once, and lists the answers whose duplicates differ
// from the repeats they carried.
func TestProducerKeyed(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{} // id + key
	var calls atomic.Int32
	p := ProduceKeyed(4, time.Millisecond, 2, func(_ context.Context, jobs []persistence.NewJob) (int, error) {
		n := calls.Add(1)
		mu.Lock()
		defer mu.Unlock()
		dups := 0
		for _, j := range jobs {
			if j.DedupKey == "" {
				continue
			}
			if seen[j.ID+"\x00"+j.DedupKey] {
				dups++
			}
			seen[j.ID+"\x00"+j.DedupKey] = true
		}
		if n == 5 {
			return dups + 1, nil // an answer that miscounts
		}
		return dups, nil
	})
	require.Eventually(t, func() bool { return calls.Load() >= 8 }, 5*time.Second, time.Millisecond)
	p.Stop()
	n := int(calls.Load())
	keyed, repeats, dups, mismatches := p.Dedup()
	require.Equal(t, 2*n, keyed, "half of the 4 ids are keyed each round")
	require.Equal(t, 2*(n-1), repeats, "every round but the first repeats the previous one's")
	require.Equal(t, repeats+1, dups)
	require.Equal(t, []string{"round 4: 2 repeats, answered 3 duplicates"}, mismatches)
	for _, ps := range p.Enqueued() {
		require.Len(t, ps, n, "repeats are not recorded as enqueued")
	}
	from, to, ok := p.Sent(`"order-1/3"`)
	require.True(t, ok)
	require.False(t, to.Before(from))
	_, _, ok = p.Sent(`"order-1/99999"`)
	require.False(t, ok)
}

// Explain drops only the redeliveries it is told are explained.
func TestExplain(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	p := []Payload{{Data: "a1", Score: 1}}
	calls := []Call{
		{ID: "a", Delivery: "q/0/5/1", Start: t0, End: t0.Add(time.Millisecond), Payloads: p, Acked: true},
		{ID: "a", Delivery: "q/0/5/2", Start: t0.Add(2 * time.Millisecond), End: t0.Add(3 * time.Millisecond), Payloads: p, Acked: true},
	}
	rep := Check(calls, map[string][]string{"a": {"a1"}}, nil)
	require.Len(t, rep.Unexplained, 1)
	require.Zero(t, rep.Explain(func(_, first, _ string) bool { return first == "q/0/5/9" }))
	require.Len(t, rep.Unexplained, 1)
	require.Equal(t, 1, rep.Explain(func(id, first, again string) bool { return id == "a" && first == "q/0/5/1" && again == "q/0/5/2" }))
	require.Empty(t, rep.Unexplained)
	require.True(t, rep.OK())
}
