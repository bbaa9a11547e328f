package persistence

import (
	"context"
	"time"
)

// The change feed of stateful queues (docs/contract.md §11).

// DefaultFeedMaxLen bounds a stateful queue's change feed when its
// configuration sets no bound: about that many of the latest changes are
// kept.
const DefaultFeedMaxLen = 10000

// FeedInlineBytes is the largest state a feed entry carries; a bigger one
// is carried as its SHA-1 (FeedEntry.Hash).
const FeedInlineBytes = 1024

// Feed positions understood by ReadFeed besides an entry's Pos.
const (
	// FeedOldest reads from the oldest entry kept.
	FeedOldest = "0"
	// FeedNew reads only entries added after the call.
	FeedNew = "$"
)

// FeedEntry is one committed change of an id's state: a handler's commit,
// an external compare-and-set or a delete. Entries of one id come in
// version order, each once, also when relays overlap; only while nodes of
// an earlier release relay (a rolling upgrade) may an entry appear twice,
// so consumers dedupe by (ID, Version) (docs/contract.md §11).
type FeedEntry struct {
	// Pos is the entry's position in the feed: read on after it.
	Pos     string
	ID      string
	Version int64
	// Deleted: the change deleted the state (Data and Hash empty).
	Deleted bool
	// Data is the new state when it is at most FeedInlineBytes (never nil
	// then); otherwise Hash holds its SHA-1 in hex and Data is nil.
	Data []byte
	Hash string
	// At is when the change was committed (the store's clock).
	At time.Time
}

// FeedStore reads a stateful queue's change feed: a role of Store that a
// store may lack (the conformance suite skips its cases then).
type FeedStore interface {
	// ReadFeed returns up to limit entries after position from (FeedOldest,
	// FeedNew or an entry's Pos), waiting up to wait for the first one
	// when there is none yet (0: not at all), and the position to read on
	// from: the last entry's Pos, or where a FeedNew read stood. A waiting
	// read ends soon after ctx does, with ctx's error.
	ReadFeed(ctx context.Context, queue, from string, limit int, wait time.Duration) (entries []FeedEntry, next string, err error)
}
