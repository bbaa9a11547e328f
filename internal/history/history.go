// Package history records what handlers were given and checks Orderly's
// guarantees on the record (docs/contract.md §2.1 to §2.3), per id:
//
//   - exclusivity: no two handler calls holding the id overlap in time;
//   - order: each call's payloads are in score order, and no payload is
//     acknowledged after a higher-scored one of the same id was, unless it
//     is a redelivery of a payload already acknowledged (at least once);
//   - nothing lost: every enqueued payload was acknowledged or is in the
//     morgue;
//   - duplicates only from redelivery: a payload acknowledged twice was
//     delivered again under a later lease of its shard (a higher epoch in
//     the delivery name), that is after a crash, a lost lease or a
//     handoff cut its batch. An owner never hands an acknowledged payload
//     to the handler again while it keeps its lease.
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
}

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
	// Unexplained lists duplicate acknowledgements delivered under the
	// same lease epoch as the first: not a redelivery after an ownership
	// change. Calls whose delivery names no epoch are not checked.
	Unexplained []string
}

// OK reports whether every guarantee held.
func (r Report) OK() bool {
	return len(r.Overlaps) == 0 && len(r.OrderViolations) == 0 && len(r.Lost) == 0 && len(r.Unexplained) == 0
}

// String summarizes the report, listing up to 10 breaches of each kind.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls over %d ids; %d payloads acknowledged, %d duplicate acknowledgements (%d not after an ownership change); %d overlaps, %d order violations, %d lost",
		r.Calls, r.IDs, r.Acked, r.Duplicates, len(r.Unexplained), len(r.Overlaps), len(r.OrderViolations), len(r.Lost))
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
		acked := map[string]Call{} // payload -> the call that first acknowledged it
		maxAcked, hasMax := 0.0, false
		for _, c := range cs {
			if !slices.IsSortedFunc(c.Payloads, func(a, b Payload) int { return cmp.Compare(a.Score, b.Score) }) {
				rep.OrderViolations = append(rep.OrderViolations, fmt.Sprintf("id %q: call %s got payloads out of score order", id, c.Delivery))
			}
			if !c.Acked {
				continue
			}
			for _, p := range c.Payloads {
				if first, ok := acked[p.Data]; ok {
					rep.Duplicates++
					e1, ok1 := Epoch(first.Delivery)
					e2, ok2 := Epoch(c.Delivery)
					if ok1 && ok2 && e2 <= e1 {
						rep.Unexplained = append(rep.Unexplained, fmt.Sprintf("id %q: payload %q acknowledged in %s and again in %s, under the same lease",
							id, p.Data, first.Delivery, c.Delivery))
					}
					continue
				}
				if hasMax && p.Score < maxAcked {
					rep.OrderViolations = append(rep.OrderViolations, fmt.Sprintf("id %q: payload %q (score %g) acknowledged after score %g", id, p.Data, p.Score, maxAcked))
				}
				acked[p.Data] = c
				rep.Acked++
			}
			for _, p := range c.Payloads {
				if !hasMax || p.Score > maxAcked {
					maxAcked, hasMax = p.Score, true
				}
			}
		}
	}
	ackedAll := map[string]map[string]bool{}
	for _, c := range calls {
		if !c.Acked {
			continue
		}
		if ackedAll[c.ID] == nil {
			ackedAll[c.ID] = map[string]bool{}
		}
		for _, p := range c.Payloads {
			ackedAll[c.ID][p.Data] = true
		}
	}
	for id, ps := range enqueued {
		dead := map[string]bool{}
		for _, p := range morgue[id] {
			dead[p] = true
		}
		for _, p := range ps {
			if !ackedAll[id][p] && !dead[p] {
				rep.Lost = append(rep.Lost, fmt.Sprintf("id %q: payload %q neither acknowledged nor in the morgue", id, p))
			}
		}
	}
	slices.Sort(rep.Overlaps)
	slices.Sort(rep.OrderViolations)
	slices.Sort(rep.Lost)
	return rep
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
