package shard

import "time"

// The prefetch window: how many ids one Advance asks for. A script call has
// a fixed cost (about 40 µs of Redis time here, docs/storage.md §6), so a
// busy shard fetches more ids per call; an idle one, a slow handler or a
// node whose shards compete for permits keeps the window Config.Prefetch
// ids long, as it always was.

// windowQuick is how long the calls of a window may take, together, for the
// next window to double: a window grows only while its turn stays short, so
// that a shard waiting for a permit of the node (max_concurrency) waits no
// longer than a few milliseconds more than it did with fixed windows.
const windowQuick = 20 * time.Millisecond

// fetchSize returns how many ids the next fetch asks for.
func (a *Actor) fetchSize() int {
	return min(max(a.window, a.cfg.Prefetch), a.cfg.MaxPrefetch)
}

// timeCalls is how many calls a window of Prefetch ids makes: a longer
// window shares their deadline bound (AdvanceRequest.MaxCalls), so that a
// new owner never holds restored ids longer than it would have held a
// window of Prefetch ids.
func (a *Actor) timeCalls() int {
	return (a.cfg.Prefetch + a.cfg.BatchSize - 1) / a.cfg.BatchSize
}

// fetchedWindow adapts the window to what a fetch of asked ids returned:
// a shard that ran dry goes back to Prefetch, a short fetch halves the
// window (a short fetch with more due, cut by the payload bound, keeps it).
func (a *Actor) fetchedWindow(asked, got int, more bool) {
	if asked == 0 {
		return
	}
	a.asked = asked
	switch {
	case got == 0:
		a.window = a.cfg.Prefetch
		a.pool.release() // the shard ran dry: its idle call goroutines end
	case got < asked && !more:
		a.window = max(a.fetchSize()/2, a.cfg.Prefetch)
	}
}

// ranWindow adapts the window to how the calls of the last window went: a
// full window whose calls were quick and all ran doubles it; slow calls, or
// a window cut short (pause, time bound, stop), bring it back to Prefetch.
func (a *Actor) ranWindow(m processed, ids int) {
	cut := len(m.skipped) > 0 || len(m.interrupted) > 0 || m.paused
	switch {
	case cut || m.dur >= a.quickFor(ids):
		a.window = a.cfg.Prefetch
	case ids >= a.asked:
		a.window = min(a.fetchSize()*2, a.cfg.MaxPrefetch)
	}
}

// quickFor is how long a window of ids may take and count as quick:
// windowQuick, or, when its calls all run at once (ConcurrentCalls, a pull
// queue's calls waiting together for workers), windowQuick for each window
// of Prefetch ids it stands for. Such a window takes about as long
// whatever its size (its slowest call), so its size does not lengthen the
// shard's turn; and its shard is never one that waits for a permit
// (MaxConcurrency needs one call at a time). Calls slower than that (a
// worker that takes longer per id than a quick window would) still bring
// it back to Prefetch.
func (a *Actor) quickFor(ids int) time.Duration {
	calls := (ids + a.cfg.BatchSize - 1) / a.cfg.BatchSize
	if a.cfg.ConcurrentCalls <= 1 || calls > a.cfg.ConcurrentCalls || ids <= a.cfg.Prefetch {
		return windowQuick
	}
	return windowQuick * time.Duration(ids) / time.Duration(a.cfg.Prefetch)
}
