package orderly

import (
	"fmt"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Entity state of stateful queues (docs/contract.md §11).
//
// On a queue whose worker sets State, every id owns a durable state (opaque
// bytes, at most MaxStateBytes) and a version that grows by one with each
// change (0: no state ever; a delete keeps counting). The handler reads it from the batch entry and may
// replace or delete it:
//
//	func(ctx context.Context, b *orderly.Batch) error {
//		for _, j := range b.Jobs {
//			n, _ := strconv.Atoi(string(j.State()))
//			n += len(j.Payloads)
//			j.SetState([]byte(strconv.Itoa(n)))
//		}
//		return nil
//	}
//
// A change is committed in the same atomic step as the acknowledgement of
// its id, under the shard's lease: a failed id (an error, a PartialFailure
// naming it, a panic, a timeout), a lost lease or a crash commits none of it.
// When the state is changed from outside (Store.SetState, HTTP PUT
// /api/v1/queues/{q}/state/{id}, `orderly state set`) while the id is in a
// handler call, that call's commit for the id fails with a conflict: nothing
// of it is committed, the id's payloads stay queued as they were (no retry
// is counted) and it is handed over again with the new state.

// DefaultMaxStateBytes is Worker.MaxStateBytes's default (1 MiB).
const DefaultMaxStateBytes = persistence.DefaultMaxStateBytes

// DefaultFeedMaxLen is Worker.FeedMaxLen's default: a stateful queue's
// change feed keeps about the latest 10,000 changes (a few MiB of Redis
// memory with small states; states over persistence.FeedInlineBytes are
// published as their SHA-1).
const DefaultFeedMaxLen = persistence.DefaultFeedMaxLen

// NoFeed as Worker.FeedMaxLen publishes no change feed.
const NoFeed = -1

// entityState is one id's state as a handler call sees it. Job values are
// copied freely (range loops), so they share it through a pointer.
type entityState struct {
	mu       sync.Mutex // guards the fields below
	stateful bool
	data     []byte
	version  int64
	changed  bool
	deleted  bool
	// fired: the id's timer brought it; timer: the call's timer change.
	fired      bool
	timerSet   bool
	timerAt    time.Time
	timerClear bool
}

func newEntityState(st *persistence.State, fired bool) *entityState {
	if st == nil {
		return nil
	}
	return &entityState{stateful: true, data: st.Data, version: st.Version, fired: fired}
}

// Timer reports whether the id's timer brought it: the timer was due when
// the batch was fetched (the job then may have no payloads). A timer fires
// once; set another with SetTimer.
func (j Job) Timer() bool {
	if j.st == nil {
		return false
	}
	j.st.mu.Lock()
	defer j.st.mu.Unlock()
	return j.st.fired
}

// SetTimer sets the id's one timer to at, replacing any other: at that
// time (with the precision of delayed jobs) the id is handed to the handler
// again with its state, and Timer reporting true, even if no payload waits
// for it. A call for the id's payloads before then does not consume it:
// clear it with ClearTimer. Committed when the id is acknowledged, like
// SetState; on a queue that is not stateful it has no effect.
func (j Job) SetTimer(at time.Time) {
	if j.st == nil {
		return
	}
	j.st.mu.Lock()
	defer j.st.mu.Unlock()
	j.st.timerSet, j.st.timerAt, j.st.timerClear = true, at, false
}

// ClearTimer clears the id's timer, committed when the id is acknowledged.
func (j Job) ClearTimer() {
	if j.st == nil {
		return
	}
	j.st.mu.Lock()
	defer j.st.mu.Unlock()
	j.st.timerSet, j.st.timerAt, j.st.timerClear = true, time.Time{}, true
}

// timerWrite returns the call's change to the id's timer, if any.
func (j Job) timerWrite() (persistence.TimerWrite, bool) {
	if j.st == nil {
		return persistence.TimerWrite{}, false
	}
	j.st.mu.Lock()
	defer j.st.mu.Unlock()
	if !j.st.timerSet {
		return persistence.TimerWrite{}, false
	}
	return persistence.TimerWrite{ID: j.ID, At: j.st.timerAt, Clear: j.st.timerClear}, true
}

// Stateful reports whether the job comes from a stateful queue (one whose
// worker sets State), whose entries carry state.
func (j Job) Stateful() bool { return j.st != nil }

// State returns the id's state: as it was when the batch was fetched, or as
// this call last set it. nil when the id has no state, had one that was
// deleted (StateVersion then keeps counting), or the queue is not stateful.
// A state that exists is never nil (an empty state is an empty slice). The slice must not be modified.
func (j Job) State() []byte {
	if j.st == nil {
		return nil
	}
	j.st.mu.Lock()
	defer j.st.mu.Unlock()
	return j.st.data
}

// StateVersion returns the version of the state handed over with the job
// (0: none). It does not change with SetState: the new version is this one
// plus one once the call's commit succeeds.
func (j Job) StateVersion() int64 {
	if j.st == nil {
		return 0
	}
	j.st.mu.Lock()
	defer j.st.mu.Unlock()
	return j.st.version
}

// SetState replaces the id's state with data, committed when the id is
// acknowledged (see the package's entity state notes). The last call for an
// id wins. data over the worker's MaxStateBytes fails the id. On a queue that
// is not stateful it has no effect.
func (j Job) SetState(data []byte) {
	if j.st == nil {
		return
	}
	j.st.mu.Lock()
	defer j.st.mu.Unlock()
	if data == nil {
		data = []byte{}
	}
	j.st.data, j.st.changed, j.st.deleted = data, true, false
}

// DeleteState deletes the id's state, committed when the id is
// acknowledged. The version keeps counting (the id keeps a tombstone one
// version up), so a compare-and-set holding an older version fails. Deleting a job never
// deletes its state: this does.
func (j Job) DeleteState() {
	if j.st == nil {
		return
	}
	j.st.mu.Lock()
	defer j.st.mu.Unlock()
	j.st.data, j.st.changed, j.st.deleted = nil, true, true
}

// stateWrite returns the change the call made to the id's state, if any.
func (j Job) stateWrite() (persistence.StateWrite, bool) {
	if j.st == nil {
		return persistence.StateWrite{}, false
	}
	j.st.mu.Lock()
	defer j.st.mu.Unlock()
	if !j.st.changed {
		return persistence.StateWrite{}, false
	}
	return persistence.StateWrite{ID: j.ID, Data: j.st.data, Delete: j.st.deleted}, true
}

// collectStates puts the state and timer changes of the call's succeeded
// ids on b for the settle; a state over maxBytes or a timer out of range
// fails its id instead (returned with the reason).
func collectStates(b *persistence.Batch, jobs []Job, failed map[string]bool, maxBytes int) map[string]error {
	var bad map[string]error
	fail := func(id string, err error) {
		if bad == nil {
			bad = map[string]error{}
		}
		bad[id] = err
	}
	for _, j := range jobs {
		if failed[j.ID] {
			continue
		}
		tw, tok := j.timerWrite()
		if tok && !tw.Clear {
			if err := persistence.ValidTime(tw.At, "timer"); err != nil {
				fail(j.ID, fmt.Errorf("SetTimer(%s): %w", tw.At.Format(time.RFC3339), err))
				continue
			}
		}
		w, ok := j.stateWrite()
		if ok && !w.Delete && len(w.Data) > maxBytes {
			fail(j.ID, fmt.Errorf("state of %d bytes is over max_state_bytes (%d)", len(w.Data), maxBytes))
			continue
		}
		if tok {
			b.TimerWrites = append(b.TimerWrites, tw)
		}
		if ok {
			b.StateWrites = append(b.StateWrites, w)
		}
	}
	return bad
}
