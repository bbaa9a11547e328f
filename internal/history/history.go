// Package history records what handlers were given and checks Orderly's
// guarantees on the record (docs/contract.md §2.1 to §2.3), per id:
//
//   - exclusivity: no two handler calls holding the id overlap in time;
//   - order: each call's payloads are in score order, and no payload is
//     acknowledged after a higher-scored one of the same id was, unless it
//     is a redelivery of a payload already acknowledged (at least once);
//   - nothing lost: every enqueued payload was acknowledged, is in the
//     morgue, or was discarded by its handler (§3.11); a payload whose
//     handler answered dead is in the morgue;
//   - redelivery only after an ownership change: a payload delivered again
//     after a call settled it for good (acknowledged, dead or discarded)
//     was delivered under a later lease of its shard (a higher epoch in
//     the delivery name), that is after a crash, a lost lease or a
//     handoff cut its batch. An owner never hands such a payload to the
//     handler again while it keeps its lease.
//
// Pull workers record their leases themselves (PullEvent lines, read by
// ReadPull), and CheckPull audits those records with the same checks plus
// the pull fence: no answer sent after its lease's deadline is accepted.
//
// Tests, the chaos test and the benchmark's audit use it. Times come from one
// process (the recorder's), so intervals compare even when the handlers ran
// in several node processes.
package history

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Call is one handler call for one id.
type Call struct {
	ID       string
	Node     string
	Delivery string
	Start    time.Time
	End      time.Time
	// Payloads as the handler got them, with their scores.
	Payloads []Payload
	// Acked reports that the handler succeeded for this id.
	Acked bool
	// Version is the version of the id's state the call was given
	// (stateful queues; 0 otherwise).
	Version int64
	// Outcome is the outcome the handler chose for the id (§3.11):
	// Snoozed, Dead or Discarded; "" for none (the call acknowledged the
	// id, failed it, or was not answered). Such a call is not Acked.
	Outcome string
}

// The outcomes a handler may choose for an id (Call.Outcome).
const (
	Snoozed   = "snoozed"
	Dead      = "dead"
	Discarded = "discarded"
)

// final reports that the call settled its payloads for good: acknowledged,
// dead or discarded.
func (c Call) final() bool { return c.Acked || c.Outcome == Dead || c.Outcome == Discarded }

// Payload is a payload with its score.
type Payload struct {
	Data  string
	Score float64
}

// Recorder collects calls. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex // guards calls
	calls []Call
}

// Add records a finished call.
func (r *Recorder) Add(c Call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// Calls returns a copy of the recorded calls.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Report is the outcome of Check.
type Report struct {
	Calls, IDs int
	// Acked counts distinct acknowledged payloads; Duplicates counts
	// acknowledgements of a payload beyond its first.
	Acked, Duplicates int
	Overlaps          []string
	OrderViolations   []string
	Lost              []string
	// Unexplained lists payloads delivered again after a call settled
	// them for good (acknowledged, dead or discarded) under the same lease
	// epoch as that call: not a redelivery after an ownership change.
	// Calls whose delivery names no epoch are not checked.
	Unexplained []string
	// redeliveries are the Unexplained entries, with their deliveries.
	redeliveries []redelivery
	// Snoozed, Dead and Discarded count the answers (per call and id) that
	// chose these outcomes.
	Snoozed, Dead, Discarded int
}

// redelivery is an entry of Report.Unexplained.
type redelivery struct{ id, first, again, text string }

// Explain drops from Unexplained the redeliveries that explained accepts
// (id, the delivery that settled the payload, the one that delivered it
// again), for what the record alone cannot tell: a call the node aborted
// after the handler answered (a cancel of another id of the call, docs/
// contract.md §3.13) settled nothing. It returns how many it dropped.
func (r *Report) Explain(explained func(id, first, again string) bool) int {
	var keep []redelivery
	r.Unexplained = r.Unexplained[:0]
	for _, d := range r.redeliveries {
		if !explained(d.id, d.first, d.again) {
			keep = append(keep, d)
			r.Unexplained = append(r.Unexplained, d.text)
		}
	}
	n := len(r.redeliveries) - len(keep)
	r.redeliveries = keep
	slices.Sort(r.Unexplained)
	return n
}

// OK reports whether every guarantee held.
func (r Report) OK() bool {
	return len(r.Overlaps) == 0 && len(r.OrderViolations) == 0 && len(r.Lost) == 0 && len(r.Unexplained) == 0
}

// String summarizes the report, listing up to 10 breaches of each kind.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls over %d ids; %d payloads acknowledged, %d duplicate acknowledgements, %d redeliveries not after an ownership change; %d overlaps, %d order violations, %d lost",
		r.Calls, r.IDs, r.Acked, r.Duplicates, len(r.Unexplained), len(r.Overlaps), len(r.OrderViolations), len(r.Lost))
	if r.Snoozed+r.Dead+r.Discarded > 0 {
		fmt.Fprintf(&b, "; outcomes chosen: %d snoozed, %d dead, %d discarded", r.Snoozed, r.Dead, r.Discarded)
	}
	for _, list := range [][]string{r.Overlaps, r.OrderViolations, r.Lost, r.Unexplained} {
		for i, s := range list {
			if i == 10 {
				fmt.Fprintf(&b, "\n  ... and %d more", len(list)-10)
				break
			}
			b.WriteString("\n  " + s)
		}
	}
	return b.String()
}

// Check checks the calls against what was enqueued (id -> payload data)
// and what is in the morgue (id -> payload data).
func Check(calls []Call, enqueued, morgue map[string][]string) Report {
	byID := map[string][]Call{}
	for _, c := range calls {
		byID[c.ID] = append(byID[c.ID], c)
	}
	rep := Report{Calls: len(calls), IDs: len(byID)}
	for id, cs := range byID {
		slices.SortFunc(cs, func(a, b Call) int { return a.Start.Compare(b.Start) })
		for i := 1; i < len(cs); i++ {
			if cs[i].Start.Before(cs[i-1].End) {
				rep.Overlaps = append(rep.Overlaps, fmt.Sprintf("id %q: call %s [%s] overlaps %s [%s]",
					id, cs[i].Delivery, cs[i].Node, cs[i-1].Delivery, cs[i-1].Node))
			}
		}
		rep.checkID(id, cs)
	}
	rep.checkLost(calls, enqueued, morgue)
	slices.Sort(rep.Overlaps)
	slices.Sort(rep.OrderViolations)
	slices.Sort(rep.Lost)
	slices.Sort(rep.Unexplained)
	return rep
}

// checkID checks the order of the calls of id, sorted by start, and that
// nothing settled for good was delivered again under the same lease.
func (rep *Report) checkID(id string, cs []Call) {
	settled := map[string]Call{} // payload -> the call that first settled it for good
	maxSettled, hasMax := 0.0, false
	for _, c := range cs {
		if !slices.IsSortedFunc(c.Payloads, func(a, b Payload) int { return cmp.Compare(a.Score, b.Score) }) {
			rep.OrderViolations = append(rep.OrderViolations, fmt.Sprintf("id %q: call %s got payloads out of score order", id, c.Delivery))
		}
		switch c.Outcome {
		case Snoozed:
			rep.Snoozed++
		case Dead:
			rep.Dead++
		case Discarded:
			rep.Discarded++
		}
		for _, p := range c.Payloads {
			first, ok := settled[p.Data]
			if !ok {
				continue
			}
			if c.Acked && first.Acked {
				rep.Duplicates++
			}
			e1, ok1 := Epoch(first.Delivery)
			e2, ok2 := Epoch(c.Delivery)
			if ok1 && ok2 && e2 <= e1 {
				text := fmt.Sprintf("id %q: payload %q %s in %s and delivered again in %s, under the same lease",
					id, p.Data, first.settledAs(), first.Delivery, c.Delivery)
				rep.Unexplained = append(rep.Unexplained, text)
				rep.redeliveries = append(rep.redeliveries, redelivery{id: id, first: first.Delivery, again: c.Delivery, text: text})
			}
		}
		if !c.final() {
			continue
		}
		for _, p := range c.Payloads {
			if _, ok := settled[p.Data]; ok {
				continue // a redelivery
			}
			if c.Acked {
				rep.Acked++
			}
			if hasMax && p.Score < maxSettled {
				rep.OrderViolations = append(rep.OrderViolations, fmt.Sprintf("id %q: payload %q (score %g) %s after score %g", id, p.Data, p.Score, c.settledAs(), maxSettled))
			}
			settled[p.Data] = c
		}
		for _, p := range c.Payloads {
			if !hasMax || p.Score > maxSettled {
				maxSettled, hasMax = p.Score, true
			}
		}
	}
}

// settledAs names how a final call settled its payloads.
func (c Call) settledAs() string {
	switch c.Outcome {
	case Dead:
		return "answered dead"
	case Discarded:
		return "discarded"
	}
	return "acknowledged"
}

// checkLost lists the enqueued payloads neither acknowledged, in the
// morgue nor discarded, and those answered dead that are not in the
// morgue.
func (rep *Report) checkLost(calls []Call, enqueued, morgue map[string][]string) {
	acked := map[string]map[string]bool{}        // id -> payload -> acknowledged or discarded
	answeredDead := map[string]map[string]bool{} // id -> payload -> answered dead
	mark := func(m map[string]map[string]bool, c Call) {
		if m[c.ID] == nil {
			m[c.ID] = map[string]bool{}
		}
		for _, p := range c.Payloads {
			m[c.ID][p.Data] = true
		}
	}
	for _, c := range calls {
		switch {
		case c.Acked || c.Outcome == Discarded:
			mark(acked, c)
		case c.Outcome == Dead:
			mark(answeredDead, c)
		}
	}
	dead := map[string]map[string]bool{}
	for id, ps := range morgue {
		mark(dead, Call{ID: id, Payloads: payloads(ps)})
	}
	for id, ps := range enqueued {
		for _, p := range ps {
			if !acked[id][p] && !dead[id][p] {
				rep.Lost = append(rep.Lost, fmt.Sprintf("id %q: payload %q neither acknowledged, discarded nor in the morgue", id, p))
			}
		}
	}
	for id, ps := range answeredDead {
		for p := range ps {
			if !dead[id][p] && !acked[id][p] {
				rep.Lost = append(rep.Lost, fmt.Sprintf("id %q: payload %q answered dead but not in the morgue", id, p))
			}
		}
	}
}

// payloads returns the data as payloads (of score 0).
func payloads(data []string) []Payload {
	out := make([]Payload, len(data))
	for i, d := range data {
		out[i] = Payload{Data: d}
	}
	return out
}

// Epoch returns the lease epoch of a delivery name
// ("<queue>/<shard>/<epoch>/<seq>"), and false when it names none.
func Epoch(delivery string) (int64, bool) {
	parts := strings.Split(delivery, "/")
	if len(parts) < 4 {
		return 0, false
	}
	e, err := strconv.ParseInt(parts[len(parts)-2], 10, 64)
	return e, err == nil
}
