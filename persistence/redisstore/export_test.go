package redisstore

import (
	"context"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// SetAfterOutboxRead makes RelayOutbox call f between reading the outbox
// and relaying what it read, to interleave relays. Call it before the store
// is used.
func SetAfterOutboxRead(s *Store, f func()) { s.afterOutboxRead = f }

// SetDrainStage makes DrainShard call f after it exported an entry
// ("exported") and after it imported it ("imported"). Call it before the
// store is used.
func SetDrainStage(s *Store, f func(stage string)) { s.drainStage = f }

// SetEpochClockOffset makes the store's acquisitions read Redis's clock
// offset by d for their epochs, as on a master whose clock is behind (d <
// 0). Call it while no other call runs.
func SetEpochClockOffset(s *Store, d time.Duration) { s.epochOffset = d.Milliseconds() }

// EnqueueRelay enqueues jobs as the outbox relay of source does, job i
// coming from the outbox entry entries[i].
func (s *Store) EnqueueRelay(ctx context.Context, queue, source string, entries []string, jobs []persistence.NewJob) error {
	_, err := s.enqueue(ctx, queue, jobs, relayFrom{source: source, entries: entries})
	return err
}
