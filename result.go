package orderly

import (
	"fmt"

	"github.com/orderlyhq/orderly/persistence"
)

// Results of finished ids (docs/contract.md §3.14).
//
// On a queue whose worker sets RetainFinished, every id the node
// acknowledges leaves a finished record for that long: when it finished,
// how many calls it took, the error of its last failed attempt and the
// result its handler set, if any:
//
//	func(ctx context.Context, b *orderly.Batch) error {
//		for _, j := range b.Jobs {
//			j.SetResult([]byte(`{"charged":true}`))
//		}
//		return nil
//	}
//
// A result is committed with its id's acknowledgement only: a failed id
// keeps none. GET /api/v1/queues/{q}/jobs/{id} and
// GET /api/v1/queues/{q}/finished show them.

// MaxResultBytes is the largest result SetResult may set (64 KiB); a bigger
// one fails its id.
const MaxResultBytes = persistence.MaxResultBytes

// SetResult sets the result of the job's id, kept in its finished record
// when the call acknowledges it, on a queue with Worker.RetainFinished
// (docs/contract.md §3.14); without retention it is dropped. The last call
// wins; nil sets an empty result. A result over MaxResultBytes fails the
// id. It has no effect on a Job that was not handed to a handler by a node.
func (j Job) SetResult(b []byte) {
	if j.em == nil {
		return
	}
	j.em.mu.Lock()
	defer j.em.mu.Unlock()
	j.em.result, j.em.hasResult = append([]byte{}, b...), true
}

// result returns the result the call set for the job, if any.
func (j Job) result() ([]byte, bool) {
	if j.em == nil {
		return nil, false
	}
	j.em.mu.Lock()
	defer j.em.mu.Unlock()
	return j.em.result, j.em.hasResult
}

// collectResults puts the results of the call's succeeded ids on b for the
// settle, when keep (the queue retains finished ids); a result over
// MaxResultBytes fails its id instead (added to bad, which it returns).
func collectResults(b *persistence.Batch, jobs []Job, failed map[string]bool, keep bool, bad map[string]error) map[string]error {
	for _, j := range jobs {
		if failed[j.ID] || bad[j.ID] != nil {
			continue
		}
		r, ok := j.result()
		if !ok {
			continue
		}
		if err := persistence.CheckResultSize(j.ID, r); err != nil {
			if bad == nil {
				bad = map[string]error{}
			}
			bad[j.ID] = fmt.Errorf("SetResult: result of %d bytes is over the limit of %d", len(r), MaxResultBytes)
			continue
		}
		if keep {
			if b.Results == nil {
				b.Results = map[string][]byte{}
			}
			b.Results[j.ID] = r
		}
	}
	return bad
}
