package shard

import (
	"math/rand/v2"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Conflicts (docs/contract.md §11): an id of a stateful queue whose state
// changed from outside while it was in flight commits nothing and goes
// back to the queue. Handed over again at once, an id that a busy outside
// writer keeps changing would be called back to back without end; so it
// waits a delay that grows with its consecutive conflicts, jittered, which
// the store keeps as a hold on it (AdvanceRequest.ConflictDelay).

const (
	// conflictBase is the longest delay after an id's first conflict; it
	// doubles with each further conflict in a row, up to conflictMax.
	conflictBase = 10 * time.Millisecond
	conflictMax  = time.Second
	// maxConflictIDs bounds the ids whose conflicts in a row the actor
	// counts; past it the count starts over (an id that conflicted and
	// never came back would otherwise stay).
	maxConflictIDs = 10000
)

// conflictDelay returns the delay of an id after n conflicts in a row
// before this one: conflictBase doubled n times, at most conflictMax,
// jittered between half of it and all of it.
func conflictDelay(n int) time.Duration {
	d := conflictMax
	if n < 7 { // 10 ms << 7 is past conflictMax
		d = min(conflictBase<<n, conflictMax)
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// setConflictDelays gives req, which settles a.cur on a stateful queue,
// the delays its ids wait if they conflict: the first conflict's for all,
// a longer one for each id that conflicted in its last settlements.
func (a *Actor) setConflictDelays(req *persistence.AdvanceRequest) {
	if !a.cfg.Stateful {
		return
	}
	req.ConflictDelay = conflictDelay(0)
	for _, j := range a.cur.Jobs {
		if n := a.conflicts[j.ID]; n > 0 {
			if req.ConflictDelays == nil {
				req.ConflictDelays = map[string]time.Duration{}
			}
			req.ConflictDelays[j.ID] = conflictDelay(n)
		}
	}
}

// countConflicts counts the conflicts in a row of the ids of the settled
// batch: one more for each id that conflicted, none for the others.
func (a *Actor) countConflicts(settled *persistence.Batch, conflicts []string) {
	if !a.cfg.Stateful || settled == nil || len(conflicts) == 0 && len(a.conflicts) == 0 {
		return
	}
	hit := make(map[string]bool, len(conflicts))
	for _, id := range conflicts {
		hit[id] = true
	}
	if a.conflicts == nil || len(a.conflicts)+len(conflicts) > maxConflictIDs {
		a.conflicts = map[string]int{}
	}
	for _, j := range settled.Jobs {
		if hit[j.ID] {
			a.conflicts[j.ID]++
		} else {
			delete(a.conflicts, j.ID)
		}
	}
}
