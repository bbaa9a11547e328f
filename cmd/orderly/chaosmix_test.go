package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// What TestChaos mixes into its load besides the faults: outcomes the
// receiver chooses per payload (docs/contract.md §3.11), keyed enqueues
// with deliberate repeats (§3.12) and an operator cancelling ids (§3.13),
// and the audits of each.

// mixer chooses, deterministically per payload, the outcome the receiver
// answers for a job: by a hash of the job's first payload (its lowest
// score, which stays first when the job comes back), 3 in 100 are snoozed
// on their first delivery only (acknowledged when they come back), 2 in
// 100 discarded and 2 in 100 answered dead, whatever the delivery; the
// others keep the answer the test gave them (acknowledged or failed at
// random).
type mixer struct {
	mu      sync.Mutex      // guards snoozed
	snoozed map[string]bool // first payloads snoozed once
}

// Outcome reasons: what the receiver answers.
const (
	mixDead    = "mixed in: dead"
	mixDiscard = "mixed in: discard"
)

func newMixer() *mixer { return &mixer{snoozed: map[string]bool{}} }

// hashOf is a stable hash of a payload.
func hashOf(data []byte) uint32 {
	h := fnv.New32a()
	h.Write(data)
	return h.Sum32()
}

// choose sets the outcome of each job of c that its first payload's hash
// picks, in place of a random failure.
func (m *mixer) choose(a *webhooktest.Answer, c *webhooktest.Call) {
	for _, j := range c.Request.Jobs {
		if len(j.Payloads) == 0 {
			continue
		}
		first := j.Payloads[0].Data
		h := hashOf(first)
		switch h % 100 {
		case 0, 1, 2:
			m.mu.Lock()
			again := m.snoozed[string(first)]
			m.snoozed[string(first)] = true
			m.mu.Unlock()
			if again {
				continue
			}
			if a.RetryIn == nil {
				a.RetryIn = map[string]wire.Delay{}
			}
			a.RetryIn[j.ID] = wire.Delay(time.Duration(200+h/100%800) * time.Millisecond)
		case 3, 4:
			if a.Discard == nil {
				a.Discard = map[string]string{}
			}
			a.Discard[j.ID] = mixDiscard
		case 5, 6:
			if a.Dead == nil {
				a.Dead = map[string]string{}
			}
			a.Dead[j.ID] = mixDead
		default:
			continue
		}
		delete(a.Failed, j.ID)
	}
}

// produceKeyed is produceOrders on a queue with a dedup window: one job in
// 5 carries a dedup key and is sent again in the next round, where the
// store must answer it as a duplicate (history.ProduceKeyed). Each payload
// gets a random priority from 1 to 4 (docs/contract.md §3.16), so ids are
// promoted while queued, in flight and restored: the audits' per-id order
// and completeness must not notice.
func produceKeyed(t *testing.T, store persistence.EnqueueReporter) *history.Producer {
	t.Helper()
	producer := history.ProduceKeyed(40, 15*time.Millisecond, 5, func(ctx context.Context, jobs []persistence.NewJob) (int, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		for i := range jobs {
			jobs[i].Priority = 1 + rand.IntN(persistence.MaxPriority)
		}
		res, err := store.EnqueueReport(ctx, "orders", jobs)
		return res.Duplicates, err
	})
	t.Cleanup(producer.Stop)
	return producer
}

// cancelRecord is one cancel the operator sent: to which node, when it was
// sent and answered (the receiver's clock: the same process), and the
// answer (status 0 and err when the node did not answer: the cancel may
// or may not have happened).
type cancelRecord struct {
	ID, Node       string
	Sent, Answered time.Time
	Status         int
	Answer         apiv1.Cancelled
	Err            error
}

// operator cancels (kill mode) an id not cancelled before through the HTTP
// API of a random node every 1 to 3 s until stopped, and records the
// answers.
type operator struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex // guards records
	recs []cancelRecord
}

// startOperator starts an operator over the nodes whose API is at urls
// (fixed ports: a restarted node answers at the same one).
func startOperator(urls []string, ids int, rnd func(int) int, note func(string, ...any)) *operator {
	op := &operator{stop: make(chan struct{}), done: make(chan struct{})}
	client := &http.Client{Timeout: 5 * time.Second}
	// Each id is cancelled at most once, in a random order: a cancel moves
	// its backlog to the morgue, and an id's morgue entry must stay
	// readable whole (morgueOf).
	order := make([]int, ids)
	for i := range order {
		j := rnd(i + 1)
		order[i], order[j] = order[j], i
	}
	go func() {
		defer close(op.done)
		for {
			select {
			case <-op.stop:
				return
			case <-time.After(time.Duration(1000+rnd(2000)) * time.Millisecond):
			}
			if len(order) == 0 {
				continue // every id cancelled once
			}
			id := order[0]
			order = order[1:]
			node := rnd(len(urls))
			r := cancelRecord{ID: "order-" + strconv.Itoa(id), Node: urls[node], Sent: time.Now()}
			r.Status, r.Answer, r.Err = cancelOver(client, urls[node], r.ID)
			r.Answered = time.Now()
			note("cancel %s on node %d: %d %+v %v", r.ID, node+1, r.Status, r.Answer, r.Err)
			op.mu.Lock()
			op.recs = append(op.recs, r)
			op.mu.Unlock()
		}
	}()
	return op
}

// cancelOver sends one cancel of id to the node at url.
func cancelOver(client *http.Client, url, id string) (int, apiv1.Cancelled, error) {
	var out apiv1.Cancelled
	resp, err := client.Post(url+"/api/v1/queues/orders/jobs/"+id+"/actions/cancel", "application/json", nil)
	if err != nil {
		return 0, out, fmt.Errorf("cancel %s: %w", id, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, out, fmt.Errorf("cancel %s: read the answer: %w", id, err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &out); err != nil {
			return resp.StatusCode, out, fmt.Errorf("cancel %s: decode %q: %w", id, body, err)
		}
	}
	return resp.StatusCode, out, nil
}

// Stop stops the operator and returns its records.
func (op *operator) Stop() []cancelRecord {
	select {
	case <-op.stop:
	default:
		close(op.stop)
	}
	<-op.done
	op.mu.Lock()
	defer op.mu.Unlock()
	return append([]cancelRecord(nil), op.recs...)
}

// auditCancels checks what followed each cancel answered 200, by this rule
// (docs/contract.md §3.13): a payload stored before the cancel was sent
// (its enqueue answered before that) is never delivered in a call that
// reached the receiver after the cancel's answer, except in the one call
// that held the id when the cancel was applied (answered in_flight: its
// request may reach the receiver late); a cancel that found no call in
// flight allows none. Payloads enqueued after the cancel are a new job, and
// those whose enqueue overlapped the cancel are not judged. That every
// payload of a cancelled id is processed or in the morgue is the audit of
// loss (history.Check). A cancel not answered or answered with an error
// (status 0, a 503) may or may not have happened and is not judged; nor is
// a 404 (nothing was cancelled).
// sent tells when a payload's enqueue was sent and answered
// (history.Producer.Sent).
func auditCancels(calls []history.Call, recs []cancelRecord, sent func(payload string) (from, to time.Time, ok bool)) []string {
	byID := map[string][]history.Call{}
	for _, c := range calls {
		byID[c.ID] = append(byID[c.ID], c)
	}
	var bad []string
	for _, r := range recs {
		if r.Status != http.StatusOK {
			continue
		}
		var late []string
		for _, c := range byID[r.ID] {
			if !c.Start.After(r.Answered) {
				continue
			}
			for _, p := range c.Payloads {
				if _, to, ok := sent(p.Data); ok && to.Before(r.Sent) {
					late = append(late, fmt.Sprintf("%s (%s)", c.Delivery, p.Data))
					break
				}
			}
		}
		allowed := 0
		if r.Answer.InFlight {
			allowed = 1
		}
		if len(late) > allowed {
			bad = append(bad, fmt.Sprintf("cancel of %s answered at %s (in_flight %v): payloads stored before it delivered after it in %v",
				r.ID, r.Answered.Format("15:04:05.000"), r.Answer.InFlight, late))
		}
	}
	return bad
}

// counterBounds are the bounds the receiver's and the operator's records
// set on the queue's snoozed, discarded and cancelled counters, which count
// settles, not answers: a settle counts only an answer the node read (at
// most one per call and id), so a counter is at most the answers that chose
// its outcome; an answer whose settle was lost (a node killed, a lease
// lost) is delivered again under a later lease of its shard, so an answer
// of an id never cancelled whose first payload was not delivered again
// under a higher epoch was settled and counted: the lower bound. cancelled
// counts at most one id per cancel that found a call in flight, or whose
// outcome is unknown (no answer, or an error such as a 503 during a Redis
// outage, which may follow a cancel applied but not confirmed).
type counterBounds struct {
	snoozedMin, snoozedMax, discardedMin, discardedMax, cancelledMax int
}

// boundsOf computes the counterBounds of a history.
func boundsOf(calls []history.Call, recs []cancelRecord) counterBounds {
	var b counterBounds
	targeted := map[string]bool{}
	for _, r := range recs {
		targeted[r.ID] = true
		if r.Status == http.StatusOK && r.Answer.InFlight || r.Status != http.StatusOK && r.Status != http.StatusNotFound {
			b.cancelledMax++
		}
	}
	byID := map[string][]history.Call{}
	for _, c := range calls {
		byID[c.ID] = append(byID[c.ID], c)
	}
	for _, c := range calls {
		if c.Outcome != history.Snoozed && c.Outcome != history.Discarded {
			continue
		}
		sure := !targeted[c.ID] && !redeliveredLater(c, byID[c.ID])
		if c.Outcome == history.Snoozed {
			b.snoozedMax++
			if sure {
				b.snoozedMin++
			}
		} else {
			b.discardedMax++
			if sure {
				b.discardedMin++
			}
		}
	}
	return b
}

// redeliveredLater reports whether a call of the same id under a higher
// lease epoch than c's carried c's first payload.
func redeliveredLater(c history.Call, same []history.Call) bool {
	e, ok := history.Epoch(c.Delivery)
	if !ok || len(c.Payloads) == 0 {
		return true // cannot tell: not sure
	}
	for _, o := range same {
		oe, ok := history.Epoch(o.Delivery)
		if !ok || oe > e {
			for _, p := range o.Payloads {
				if p.Data == c.Payloads[0].Data {
					return true
				}
			}
		}
	}
	return false
}

// check checks the queue's counters against the bounds.
func (b counterBounds) check(q apiv1.Queue) []string {
	var bad []string
	within := func(name string, got int64, lo, hi int) {
		if got < int64(lo) || got > int64(hi) {
			bad = append(bad, fmt.Sprintf("%s counter %d not within [%d, %d]", name, got, lo, hi))
		}
	}
	within("snoozed", q.Snoozed, b.snoozedMin, b.snoozedMax)
	within("discarded", q.Discarded, b.discardedMin, b.discardedMax)
	within("cancelled", q.Cancelled, 0, b.cancelledMax)
	return bad
}

// cancelSummary counts the cancels by answer.
func cancelSummary(recs []cancelRecord) string {
	var ok, inFlight, notFound, unsure int
	for _, r := range recs {
		switch r.Status {
		case http.StatusOK:
			ok++
			if r.Answer.InFlight {
				inFlight++
			}
		case http.StatusNotFound:
			notFound++
		default:
			unsure++
		}
	}
	return fmt.Sprintf("%d cancels (%d applied, %d of them with a call in flight; %d found nothing; %d unanswered or failed)",
		len(recs), ok, inFlight, notFound, unsure)
}

// abortedByCancel explains a payload delivered again under the same lease
// (history.Report.Explain): a cancel answered in_flight aborts the whole
// call that held its id, and the call's other ids go back to the queue
// (docs/contract.md §3.13), also when the receiver had answered them
// before the node aborted it. So the delivery of the id's last call
// started by the cancel's answer (the call it held) settled nothing.
func abortedByCancel(calls []history.Call, recs []cancelRecord) func(id, first, again string) bool {
	aborted := map[string]bool{}
	for _, r := range recs {
		if r.Status != http.StatusOK || !r.Answer.InFlight {
			continue
		}
		var held *history.Call // the last call of the id started by the answer
		for i, c := range calls {
			if c.ID == r.ID && !c.Start.After(r.Answered) && (held == nil || c.Start.After(held.Start)) {
				held = &calls[i]
			}
		}
		if held != nil {
			aborted[held.Delivery] = true
		}
	}
	return func(_, first, _ string) bool { return aborted[first] }
}
