package webhook

import (
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// requestOf is the Request that delivers b. Its jobs' payloads share one
// slice, and their bytes are b's.
func requestOf(b *orderly.Batch) wire.Request {
	r := wire.Request{Queue: b.Queue, Shard: b.Shard, Jobs: make([]wire.Job, len(b.Jobs))}
	n := 0
	for _, j := range b.Jobs {
		n += len(j.Payloads)
	}
	payloads := make([]wire.Payload, n)
	for i, j := range b.Jobs {
		ps := payloads[:len(j.Payloads):len(j.Payloads)]
		payloads = payloads[len(j.Payloads):]
		for k, p := range j.Payloads {
			ps[k] = wire.Payload(p)
		}
		r.Jobs[i] = wire.Job{ID: j.ID, RetryCount: j.RetryCount, PerformAt: unixSeconds(j.PerformAt), Error: j.Error, Payloads: ps}
		if j.Stateful() {
			r.Jobs[i].Stateful, r.Jobs[i].State, r.Jobs[i].Version = true, j.State(), j.StateVersion()
			r.Jobs[i].Timer = j.Timer()
		}
	}
	return r
}

// unixSeconds converts t to float unix seconds; the zero time is 0. Adding
// the fraction to the whole seconds keeps more precision than dividing
// t.UnixNano().
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}
