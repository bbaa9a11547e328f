package webhook

import (
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// requestOf is the Request that delivers b. Its jobs' payloads share one
// slice, and their bytes are b's.
func requestOf(b *orderly.Batch) wire.Request {
	return wire.Request{Queue: b.Queue, Shard: b.Shard, Jobs: appendJobs(make([]wire.Job, 0, len(b.Jobs)), b)}
}

// appendJobs appends the jobs of b, as a request delivers them, to dst.
// Their payloads share one allocation.
func appendJobs(dst []wire.Job, b *orderly.Batch) []wire.Job {
	n := 0
	for _, j := range b.Jobs {
		n += len(j.Payloads)
	}
	payloads := make([]wire.Payload, n)
	for _, j := range b.Jobs {
		ps := payloads[:len(j.Payloads):len(j.Payloads)]
		payloads = payloads[len(j.Payloads):]
		for k, p := range j.Payloads {
			ps[k] = wire.Payload(p)
		}
		w := wire.Job{ID: j.ID, RetryCount: j.RetryCount, PerformAt: unixSeconds(j.PerformAt), Error: j.Error, Payloads: ps}
		if j.Stateful() {
			w.Stateful, w.State, w.Version = true, j.State(), j.StateVersion()
			w.Timer = j.Timer()
		}
		dst = append(dst, w)
	}
	return dst
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
