package history

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Send enqueues one round of a Producer; nil means the jobs were
// acknowledged.
type Send func(ctx context.Context, jobs []persistence.NewJob) error

// Producer is a steady load for the tests that check histories: every
// interval, round k enqueues to each of its ids ("order-<i>") the payload
// "order-<i>/<k>" (a JSON string, so that webhooks carry it as it is) with
// score k, and records what was acknowledged, the input of Check.
type Producer struct {
	cancel context.CancelFunc // stops the rounds
	done   chan struct{}      // closed when the last round returned

	mu       sync.Mutex // guards enqueued, unsure, refused
	enqueued map[string][]string
	unsure   map[string]bool
	refused  int
}

// Produce starts a producer of ids ids that sends a round every interval
// through send, until Stop.
func Produce(ids int, every time.Duration, send Send) *Producer {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Producer{cancel: cancel, done: make(chan struct{}),
		enqueued: map[string][]string{}, unsure: map[string]bool{}}
	go func() {
		defer close(p.done)
		for k := 0; ; k++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			jobs := make([]persistence.NewJob, ids)
			for i := range jobs {
				id := "order-" + strconv.Itoa(i)
				score := float64(k)
				jobs[i] = persistence.NewJob{ID: id, Payload: []byte(strconv.Quote(id + "/" + strconv.Itoa(k))), Score: &score}
			}
			err := send(ctx, jobs)
			p.mu.Lock()
			if err != nil {
				// Not acknowledged, so not expected; but a round whose
				// answer was lost may have landed all the same.
				p.refused++
				for _, j := range jobs {
					p.unsure[string(j.Payload)] = true
				}
			} else {
				for _, j := range jobs {
					p.enqueued[j.ID] = append(p.enqueued[j.ID], string(j.Payload))
				}
			}
			p.mu.Unlock()
		}
	}()
	return p
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
