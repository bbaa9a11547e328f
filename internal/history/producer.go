package history

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Send enqueues one round of a Producer; nil means the jobs were
// acknowledged.
type Send func(ctx context.Context, jobs []persistence.NewJob) error

// SendReport is a Send that also returns how many of the jobs the store
// found duplicates (docs/contract.md §3.12), as an enqueue answer's
// "duplicates" says.
type SendReport func(ctx context.Context, jobs []persistence.NewJob) (duplicates int, err error)

// round is when a round was sent and answered.
type round struct{ start, end time.Time }

// Producer is a steady load for the tests that check histories: every
// interval, round k enqueues to each of its ids ("order-<i>") the payload
// "order-<i>/<k>" (a JSON string, so that webhooks carry it as it is) with
// score k, and records what was acknowledged, the input of Check.
type Producer struct {
	cancel context.CancelFunc // stops the rounds
	done   chan struct{}      // closed when the last round returned

	mu       sync.Mutex // guards the fields below
	enqueued map[string][]string
	unsure   map[string]bool
	refused  int
	rounds   []round
	// Keyed rounds (ProduceKeyed): the jobs sent with a key, the repeats
	// sent, the duplicates the answers counted, and the answers whose
	// count was not the number of repeats they carried.
	keyed, repeats, duplicates int
	mismatches                 []string
}

// Produce starts a producer of ids ids that sends a round every interval
// through send, until Stop.
func Produce(ids int, every time.Duration, send Send) *Producer {
	return ProduceKeyed(ids, every, 0, func(ctx context.Context, jobs []persistence.NewJob) (int, error) {
		return 0, send(ctx, jobs)
	})
}

// ProduceKeyed is Produce for a queue with a dedup window: when keyEvery
// is above 0, round k gives the job of each id i with (i+k) % keyEvery == 0
// a dedup key (its payload), and sends again, after its own jobs, the
// keyed jobs of round k-1 when that round was acknowledged: deliberate
// repeats within the window, which the answer must count as duplicates
// (Mismatches lists the answers that did not) and which are not recorded
// as enqueued.
func ProduceKeyed(ids int, every time.Duration, keyEvery int, send SendReport) *Producer {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Producer{cancel: cancel, done: make(chan struct{}),
		enqueued: map[string][]string{}, unsure: map[string]bool{}}
	go func() {
		defer close(p.done)
		var last []persistence.NewJob // keyed jobs of the previous round, if acknowledged
		for k := 0; ; k++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			jobs, keyed := roundJobs(ids, k, keyEvery)
			start := time.Now()
			dups, err := send(ctx, append(jobs, last...))
			p.record(k, round{start: start, end: time.Now()}, jobs, len(keyed), len(last), dups, err)
			last = nil
			if err == nil {
				last = keyed
			}
		}
	}()
	return p
}

// roundJobs returns the jobs of round k and those of them given a key.
func roundJobs(ids, k, keyEvery int) (jobs, keyed []persistence.NewJob) {
	jobs = make([]persistence.NewJob, ids)
	for i := range jobs {
		id := "order-" + strconv.Itoa(i)
		score := float64(k)
		jobs[i] = persistence.NewJob{ID: id, Payload: []byte(strconv.Quote(id + "/" + strconv.Itoa(k))), Score: &score}
		if keyEvery > 0 && (i+k)%keyEvery == 0 {
			jobs[i].DedupKey = string(jobs[i].Payload)
			keyed = append(keyed, jobs[i])
		}
	}
	return jobs, keyed
}

// record records the answer to round k: its jobs (the repeats aside), how
// many were keyed and repeated, and the duplicates the answer counted.
func (p *Producer) record(k int, r round, jobs []persistence.NewJob, keyed, repeats, dups int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.rounds) <= k {
		p.rounds = append(p.rounds, round{})
	}
	p.rounds[k] = r
	if err != nil {
		// Not acknowledged, so not expected; but a round whose answer
		// was lost may have landed all the same.
		p.refused++
		for _, j := range jobs {
			p.unsure[string(j.Payload)] = true
		}
		return
	}
	for _, j := range jobs {
		p.enqueued[j.ID] = append(p.enqueued[j.ID], string(j.Payload))
	}
	p.keyed += keyed
	p.repeats += repeats
	p.duplicates += dups
	if dups != repeats {
		p.mismatches = append(p.mismatches, fmt.Sprintf("round %d: %d repeats, answered %d duplicates", k, repeats, dups))
	}
}

// Sent returns when the round of payload (as the producer made it) was
// sent and answered; false for a payload not of this producer's rounds.
// A payload acknowledged was stored within [from, to].
func (p *Producer) Sent(payload string) (from, to time.Time, ok bool) {
	s, err := strconv.Unquote(payload)
	if err != nil {
		return from, to, false
	}
	k, err := strconv.Atoi(s[strings.LastIndexByte(s, '/')+1:])
	if err != nil || k < 0 {
		return from, to, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if k >= len(p.rounds) || p.rounds[k].end.IsZero() {
		return from, to, false
	}
	return p.rounds[k].start, p.rounds[k].end, true
}

// Dedup returns, for keyed rounds, the jobs sent with a key, the repeats
// sent and the duplicates counted by the acknowledged rounds' answers, and
// the answers whose count differed from their repeats.
func (p *Producer) Dedup() (keyed, repeats, duplicates int, mismatches []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keyed, p.repeats, p.duplicates, append([]string(nil), p.mismatches...)
}

// Stop stops the producer, cancelling a round in flight (whose payloads
// then count as unsure, unless it was acknowledged), and waits for it.
func (p *Producer) Stop() {
	p.cancel()
	<-p.done
}

// Enqueued returns the acknowledged payloads: id -> payloads, in order.
func (p *Producer) Enqueued() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][]string, len(p.enqueued))
	for id, ps := range p.enqueued {
		out[id] = append([]string(nil), ps...)
	}
	return out
}

// Unsure returns the payloads of the rounds that failed: they may have
// landed, or not.
func (p *Producer) Unsure() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.unsure)
}

// Refused counts the rounds that failed.
func (p *Producer) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}
