package history

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/orderlyhq/orderly/webhook/wire"
)

// Records of pull workers (docs/contract.md §6.6) and their audit. A pull
// worker writes one PullEvent a line as it goes: "pull" once a pull
// answered 200, "send" just before it sends its answer, "answer" once the
// answer's response came (or the request failed). ReadPull turns the lines
// into one PullCall per id of each lease, and CheckPull audits them.
//
// What a worker can know: it held an id from the moment it read the pull's
// answer (Pulled) to the moment it sent its answer (Sent); the node's own
// hold of the call began before and ended after that, at the latest at the
// lease's deadline. The fence is that the node accepts an answer only while
// the lease is valid, and that at most one lease of an id is valid at a
// time. Wall clocks compare: every process runs on one host.

// The kinds of PullEvent.
const (
	PullEventPull   = "pull"
	PullEventExtend = "extend"
	PullEventSend   = "send"
	PullEventAnswer = "answer"
)

// PullEvent is one line of a pull worker's record.
type PullEvent struct {
	Kind   string `json:"kind"`
	Worker string `json:"worker,omitempty"`
	// Node is the base URL of the node the lease is of.
	Node  string    `json:"node,omitempty"`
	Lease string    `json:"lease"`
	At    time.Time `json:"at"`
	// Deadline is the lease's deadline as the node wrote it (unix seconds
	// to the millisecond, rounded down): a pull's, or an extension's 200.
	Deadline float64 `json:"deadline,omitempty"`
	// By is an extension's "by", in seconds; its At is when its response
	// came (or its request failed).
	By float64 `json:"by,omitempty"`
	// Jobs are the lease's jobs; "pull" only.
	Jobs []wire.Job `json:"jobs,omitempty"`
	// Answer is what the worker answers; "send" only (nil: every id done).
	Answer *wire.Answer `json:"answer,omitempty"`
	// Status is the HTTP status of an answer or extension, 0 when none
	// came.
	Status int `json:"status,omitempty"`
	// Reason is a 409's reason; Lost the ids a 200 names lost.
	Reason string   `json:"reason,omitempty"`
	Lost   []string `json:"lost,omitempty"`
	// Err is why no response came; NotDelivered reports that the
	// connection was refused: the node never read the answer.
	Err          string `json:"err,omitempty"`
	NotDelivered bool   `json:"not_delivered,omitempty"`
}

// UnixDeadline is a deadline the node wrote in unix seconds (to the
// millisecond) as a time.
func UnixDeadline(sec float64) time.Time { return time.UnixMilli(int64(math.Round(sec * 1000))) }

// ExtendedTo is the latest deadline an extension may have moved its lease
// to: the deadline a 200 gave, or, when no response came and the node may
// have taken it, its By after its At (the node's clock read before that);
// false when it moved nothing (a 409, a refused connection).
func (e PullEvent) ExtendedTo() (time.Time, bool) {
	switch {
	case e.Status == 200:
		return UnixDeadline(e.Deadline), true
	case e.Status == 0 && !e.NotDelivered:
		return e.At.Add(time.Duration(e.By * float64(time.Second))), true
	}
	return time.Time{}, false
}

// PullCall is one id of one lease as its worker recorded it.
type PullCall struct {
	ID, Worker, Node, Lease string
	// Pulled is when the worker read the pull's answer; Sent when it sent
	// its answer (zero: never sent); Answered when the answer's response
	// came (zero: none).
	Pulled, Sent, Answered time.Time
	// Deadline is the lease's latest possible deadline: the pull's, or a
	// later one an extension gave or may have given (ExtendedTo), to the
	// millisecond below.
	Deadline time.Time
	// Extensions and ExtensionsRefused count the lease's extensions and
	// those refused with a 409.
	Extensions, ExtensionsRefused int
	Payloads                      []Payload
	// Acked and Outcome are what the answer chose for the id, as in Call;
	// DeadReason is the reason of a dead answer.
	Acked      bool
	Outcome    string
	DeadReason string
	// Status is the answer's HTTP status, 0 when no response came;
	// Reason a 409's reason; Lost reports a 200 that named the id lost.
	Status int
	Reason string
	Lost   bool
	// NotDelivered reports an answer whose connection was refused.
	NotDelivered bool
}

// Accepted reports that the node took the answer for the id: a 200 that
// did not name it lost. Only such an answer may commit.
func (c PullCall) Accepted() bool { return c.Status == 200 && !c.Lost }

// Late reports that the answer was sent at or after the lease's deadline:
// the node read it after the deadline for sure (Deadline is rounded down to
// the millisecond, hence the millisecond added).
func (c PullCall) Late() bool {
	return !c.Sent.IsZero() && !c.Sent.Before(c.Deadline.Add(time.Millisecond))
}

// Unsure reports an answer sent whose fate is unknown: no response came,
// and the connection was not refused (the worker or the node was killed
// while it was on its way), so it may have committed.
func (c PullCall) Unsure() bool { return !c.Sent.IsZero() && c.Status == 0 && !c.NotDelivered }

// ReadPull reads the lines of a pull worker's record into calls, one per id
// of each lease, in the order of the leases' pulls. A last line cut short
// (the worker killed as it wrote it) is ignored; any other bad line is an
// error.
func ReadPull(r io.Reader) ([]PullCall, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<28)
	type lease struct {
		pull, send, answer *PullEvent
		extends            []PullEvent
	}
	leases := map[string]*lease{}
	var order []string
	var bad error
	for n := 1; sc.Scan(); n++ {
		if bad != nil {
			return nil, bad // a bad line that was not the last
		}
		var e PullEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			bad = fmt.Errorf("pull record line %d: %w", n, err)
			continue
		}
		l := leases[e.Lease]
		if l == nil {
			l = &lease{}
			leases[e.Lease] = l
			order = append(order, e.Lease)
		}
		switch e.Kind {
		case PullEventPull:
			l.pull = &e
		case PullEventExtend:
			l.extends = append(l.extends, e)
		case PullEventSend:
			l.send = &e
		case PullEventAnswer:
			l.answer = &e
		default:
			return nil, fmt.Errorf("pull record line %d: unknown kind %q", n, e.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read a pull record: %w", err)
	}
	var out []PullCall
	for _, id := range order {
		l := leases[id]
		if l.pull == nil {
			return nil, fmt.Errorf("pull record: lease %s answered but never pulled", id)
		}
		out = append(out, pullCalls(l.pull, l.extends, l.send, l.answer)...)
	}
	return out, nil
}

// pullCalls turns the events of one lease into its calls.
func pullCalls(pull *PullEvent, extends []PullEvent, send, answer *PullEvent) []PullCall {
	deadline := UnixDeadline(pull.Deadline)
	refused := 0
	for _, e := range extends {
		if d, ok := e.ExtendedTo(); ok && d.After(deadline) {
			deadline = d
		}
		if e.Status == 409 {
			refused++
		}
	}
	var out []PullCall
	for _, j := range pull.Jobs {
		c := PullCall{ID: j.ID, Worker: pull.Worker, Node: pull.Node, Lease: pull.Lease,
			Pulled: pull.At, Deadline: deadline, Extensions: len(extends), ExtensionsRefused: refused}
		for _, p := range j.Payloads {
			c.Payloads = append(c.Payloads, Payload{Data: string(p.Data), Score: p.Score})
		}
		if send != nil {
			c.Sent = send.At
			c.Acked, c.Outcome, c.DeadReason = outcomeOf(send.Answer, j.ID)
		}
		if answer != nil {
			c.Answered, c.Status, c.Reason, c.NotDelivered = answer.At, answer.Status, answer.Reason, answer.NotDelivered
			c.Lost = slices.Contains(answer.Lost, j.ID)
		}
		out = append(out, c)
	}
	return out
}

// outcomeOf is what a pull answer chose for id: acknowledged, or an
// outcome (with the reason of a dead one), or a failure (neither).
func outcomeOf(a *wire.Answer, id string) (acked bool, outcome, reason string) {
	if a == nil {
		return true, "", ""
	}
	if r, ok := a.Dead[id]; ok {
		return false, Dead, r
	}
	if _, ok := a.Discard[id]; ok {
		return false, Discarded, ""
	}
	if _, ok := a.RetryIn[id]; ok {
		return false, Snoozed, ""
	}
	if _, ok := a.Failed[id]; ok {
		return false, "", ""
	}
	return true, "", ""
}

// PullReport is the outcome of CheckPull.
type PullReport struct {
	// Report is Check's report on the accepted calls (and, for Lost, the
	// unsure ones): its Overlaps are overlaps of accepted calls.
	Report
	// Leases counts the leases; Accepted, Refused (409), NotDelivered and
	// Unsure count the calls by their answer's fate, Unanswered those
	// whose worker never sent an answer (killed).
	Leases, Accepted, Refused, NotDelivered, Unsure, Unanswered int
	// Late counts the calls answered at or after their lease's deadline,
	// LateRefused those of them refused with a 409.
	Late, LateRefused int
	// RefusedBy counts the refused calls by the 409's reason.
	RefusedBy map[string]int
	// Extended counts the leases extended, ExtendRefused those of
	// them with an extension refused (the lease ended first).
	Extended, ExtendRefused int
	// StaleOverlaps counts the calls not accepted whose worker still held
	// the id (read the pull, answer not sent) when another lease of it was
	// pulled: the wall-time overlaps the fence makes harmless.
	StaleOverlaps int
	// LateAccepted lists late answers the node took: a broken fence.
	LateAccepted []string
	// UnexplainedDead lists payloads in the morgue that no accepted (or
	// unsure) answer sent before its deadline answered dead.
	UnexplainedDead []string
}

// OK reports whether every guarantee held.
func (r PullReport) OK() bool {
	return r.Report.OK() && len(r.LateAccepted) == 0 && len(r.UnexplainedDead) == 0
}

// String summarizes the report, listing up to 10 breaches of each kind.
func (r PullReport) String() string {
	s := fmt.Sprintf("%d leases (%d extended, %d with an extension refused): %d calls accepted, %d refused %v, %d not delivered, %d unsure, %d never answered; %d calls answered late (%d refused, %d accepted, %d not delivered or without a response), %d stale holders overlapped by the next; %d morgue payloads unexplained; accepted calls: %s",
		r.Leases, r.Extended, r.ExtendRefused, r.Accepted, r.Refused, r.RefusedBy, r.NotDelivered, r.Unsure, r.Unanswered,
		r.Late, r.LateRefused, len(r.LateAccepted), r.Late-r.LateRefused-len(r.LateAccepted), r.StaleOverlaps, len(r.UnexplainedDead), r.Report.String())
	for _, list := range [][]string{r.LateAccepted, r.UnexplainedDead} {
		for i, b := range list {
			if i == 10 {
				s += fmt.Sprintf("\n  ... and %d more", len(list)-10)
				break
			}
			s += "\n  " + b
		}
	}
	return s
}

// CheckPull audits pull workers' calls against what was enqueued (id ->
// payload data) and what is in the morgue (id -> payload data). It checks:
//
//   - exclusivity of the holders that could commit: the calls of an id
//     whose answer the node accepted do not overlap, each taken from the
//     pull's answer read to its own answer sent (a sub-interval of the
//     node's hold, which ends when the node takes the answer);
//   - the fence: no answer sent at or after its lease's deadline was
//     accepted (LateAccepted), so a worker paused past its deadline, whose
//     call overlaps the next holder's in wall time, committed nothing;
//   - order: every call's payloads in score order, and none acknowledged
//     after a higher-scored one was (Check, on the accepted calls);
//   - nothing lost: every enqueued payload acknowledged by an accepted (or
//     unsure) answer, or in the morgue; a payload an accepted answer
//     answered dead is in the morgue;
//   - nothing in the morgue that no answer sent before its deadline and
//     accepted (or unsure) answered dead (UnexplainedDead): a refused
//     answer committed nothing. This needs a queue whose ids never run out
//     of retries.
//
// Calls never answered, refused or not delivered are audited for order
// only; unsure calls count only for what was lost, as if accepted.
func CheckPull(calls []PullCall, enqueued, morgue map[string][]string) PullReport {
	rep := PullReport{RefusedBy: map[string]int{}}
	var accepted, maybe []Call
	leases := map[string]bool{}
	deadOK := map[string]map[string]bool{} // id -> payload -> answered dead in time
	for _, c := range calls {
		if !leases[c.Lease] && c.Extensions > 0 {
			rep.Extended++
			if c.ExtensionsRefused > 0 {
				rep.ExtendRefused++
			}
		}
		leases[c.Lease] = true
		call := Call{ID: c.ID, Node: c.Worker + "@" + c.Node, Delivery: "lease " + c.Lease,
			Start: c.Pulled, End: c.Sent, Payloads: c.Payloads, Acked: c.Acked, Outcome: c.Outcome}
		rep.count(c)
		switch {
		case c.Late() && c.Status == 200:
			rep.LateAccepted = append(rep.LateAccepted, fmt.Sprintf("id %q: lease %s of %s answered by %s at %s, %s after its deadline, and accepted",
				c.ID, c.Lease, c.Node, c.Worker, c.Sent.Format("15:04:05.000"), c.Sent.Sub(c.Deadline)))
		case c.Accepted():
			accepted = append(accepted, call)
		case c.Unsure() && !c.Late():
			maybe = append(maybe, call)
		default:
			if !slices.IsSortedFunc(c.Payloads, func(a, b Payload) int { return cmp.Compare(a.Score, b.Score) }) {
				rep.OrderViolations = append(rep.OrderViolations, fmt.Sprintf("id %q: lease %s got payloads out of score order", c.ID, c.Lease))
			}
		}
		if c.Outcome == Dead && !c.Late() && (c.Accepted() || c.Unsure()) {
			if deadOK[c.ID] == nil {
				deadOK[c.ID] = map[string]bool{}
			}
			for _, p := range c.Payloads {
				deadOK[c.ID][p.Data] = true
			}
		}
	}
	orders := rep.OrderViolations
	rep.Report = Check(accepted, enqueued, morgue)
	rep.OrderViolations = append(rep.OrderViolations, orders...)
	if len(rep.Lost) > 0 && len(maybe) > 0 {
		var again Report
		again.checkLost(append(slices.Clone(accepted), maybe...), enqueued, morgue)
		rep.Lost = again.Lost
	}
	rep.Leases = len(leases)
	rep.StaleOverlaps = staleOverlaps(calls)
	for id, ps := range morgue {
		for _, p := range ps {
			if !deadOK[id][p] {
				rep.UnexplainedDead = append(rep.UnexplainedDead, fmt.Sprintf("id %q: payload %q is in the morgue, but no accepted answer sent in time answered it dead", id, p))
			}
		}
	}
	slices.Sort(rep.LateAccepted)
	slices.Sort(rep.UnexplainedDead)
	slices.Sort(rep.OrderViolations)
	return rep
}

// count counts c by its answer's fate.
func (rep *PullReport) count(c PullCall) {
	switch {
	case c.Sent.IsZero():
		rep.Unanswered++
	case c.Accepted():
		rep.Accepted++
	case c.Status == 409:
		rep.Refused++
		rep.RefusedBy[c.Reason]++
	case c.NotDelivered:
		rep.NotDelivered++
	case c.Unsure():
		rep.Unsure++
	}
	if c.Late() {
		rep.Late++
		if c.Status == 409 {
			rep.LateRefused++
		}
	}
}

// staleOverlaps counts the calls not accepted whose worker still held the
// id when another lease of it was pulled.
func staleOverlaps(calls []PullCall) int {
	byID := map[string][]PullCall{}
	for _, c := range calls {
		byID[c.ID] = append(byID[c.ID], c)
	}
	n := 0
	for _, cs := range byID {
		for _, c := range cs {
			if c.Accepted() || c.Sent.IsZero() {
				continue
			}
			for _, o := range cs {
				if o.Lease != c.Lease && o.Pulled.After(c.Pulled) && o.Pulled.Before(c.Sent) {
					n++
					break
				}
			}
		}
	}
	return n
}
