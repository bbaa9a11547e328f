// Package clock is the time source of everything in Orderly that schedules:
// leases and their guard, drains and the node's stop deadline, due timers,
// retries, morgue retention, and the cluster's health and re-join loops.
// Production code uses Real (or the clock a program sets in
// orderly.Config.Clock, which has the same methods); tests use a Simulated
// clock and move time by hand, so that a lease guard or a drain deadline is
// tested in virtual time without sleeping.
package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Clock tells the time and runs functions after a delay. Implementations are
// safe for concurrent use.
type Clock interface {
	// Now returns the current time. The real clock's readings carry Go's
	// monotonic clock, so differences between them are immune to wall-clock
	// steps.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed (at once
	// when d <= 0). Calling stop cancels the call; it reports whether the
	// call was still pending (as context.AfterFunc's stop does).
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Since returns the time elapsed since t on c.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the duration until t on c.
func Until(c Clock, t time.Time) time.Duration { return t.Sub(c.Now()) }

// After returns a channel that receives one value once d has passed on c,
// and a function that cancels it (a select on a stopped channel blocks for
// ever, so cancel only what nobody waits on).
func After(c Clock, d time.Duration) (<-chan struct{}, func() bool) {
	ch := make(chan struct{}, 1)
	stop := c.AfterFunc(d, func() { ch <- struct{}{} })
	return ch, stop
}

// Sleep waits d on c; it returns ctx's error if ctx ends first.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	ch, stop := After(c, d)
	defer stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Real returns the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Simulated is a clock that moves only when told to. Functions scheduled with
// AfterFunc run, in the order of their due times, on the goroutine that calls
// Advance or Set, after the clock reached their due time. The zero value is
// not usable; use NewSimulated.
type Simulated struct {
	mu     sync.Mutex // guards now, timers and seq
	now    time.Time
	timers []*simTimer
	seq    uint64
}

type simTimer struct {
	c   *Simulated
	at  time.Time
	seq uint64 // orders timers of equal due time by creation
	f   func()
}

// NewSimulated returns a simulated clock set to t.
func NewSimulated(t time.Time) *Simulated { return &Simulated{now: t} }

// Now implements Clock.
func (s *Simulated) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// AfterFunc implements Clock. A call with d <= 0 runs f in a new goroutine at
// once, as time.AfterFunc does.
func (s *Simulated) AfterFunc(d time.Duration, f func()) func() bool {
	if d <= 0 {
		go f()
		return func() bool { return false }
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	t := &simTimer{c: s, at: s.now.Add(d), seq: s.seq, f: f}
	s.timers = append(s.timers, t)
	return t.stop
}

func (t *simTimer) stop() bool {
	s := t.c
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.Index(s.timers, t)
	if i < 0 {
		return false
	}
	s.timers = slices.Delete(s.timers, i, i+1)
	return true
}

// Advance moves the clock forward by d, running every timer that falls due on
// the way, each at its own due time.
func (s *Simulated) Advance(d time.Duration) {
	s.mu.Lock()
	to := s.now.Add(d)
	s.mu.Unlock()
	s.Set(to)
}

// Jump moves the clock forward by d without running the timers that fall
// due on the way, as a paused process (SIGSTOP, a long GC pause, a frozen
// VM) sees time: they run late, at the next Advance or Set.
func (s *Simulated) Jump(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d > 0 {
		s.now = s.now.Add(d)
	}
}

// Set moves the clock to t (never backwards: an earlier t only runs the
// timers already due), running every timer that falls due on the way.
func (s *Simulated) Set(t time.Time) {
	for {
		s.mu.Lock()
		next := s.next(t)
		if next == nil {
			if t.After(s.now) {
				s.now = t
			}
			s.mu.Unlock()
			return
		}
		s.timers = slices.DeleteFunc(s.timers, func(x *simTimer) bool { return x == next })
		if next.at.After(s.now) {
			s.now = next.at
		}
		s.mu.Unlock()
		next.f()
	}
}

// next returns the earliest timer due at or before t, or nil. Called with
// s.mu held.
func (s *Simulated) next(t time.Time) *simTimer {
	var best *simTimer
	for _, x := range s.timers {
		if x.at.After(t) {
			continue
		}
		if best == nil || x.at.Before(best.at) || x.at.Equal(best.at) && x.seq < best.seq {
			best = x
		}
	}
	return best
}

// Pending returns how many timers wait to fire.
func (s *Simulated) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.timers)
}

// Timers returns the due times of the pending timers, earliest first.
func (s *Simulated) Timers() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]time.Time, len(s.timers))
	for i, x := range s.timers {
		out[i] = x.at
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// Next returns the due time of the earliest pending timer; ok is false when
// none is pending.
func (s *Simulated) Next() (at time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.timers {
		if !ok || x.at.Before(at) {
			at, ok = x.at, true
		}
	}
	return at, ok
}
