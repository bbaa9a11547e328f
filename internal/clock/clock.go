// Package clock is the time source of everything in Orderly that schedules:
// leases and their guard, drains, due timers, retries and morgue retention.
// Production code uses Real; tests use a Simulated clock and move time by
// hand, so that a lease guard or a drain deadline is tested in virtual time
// without sleeping.
package clock

import (
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
	// when d <= 0) and returns a Timer that can cancel the call.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop cancels the call; it reports whether the call was still pending.
	Stop() bool
}

// Since returns the time elapsed since t on c.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the duration until t on c.
func Until(c Clock, t time.Time) time.Duration { return t.Sub(c.Now()) }

// Real returns the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

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
func (s *Simulated) AfterFunc(d time.Duration, f func()) Timer {
	if d <= 0 {
		go f()
		return stopped{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	t := &simTimer{c: s, at: s.now.Add(d), seq: s.seq, f: f}
	s.timers = append(s.timers, t)
	return t
}

// Stop implements Timer.
func (t *simTimer) Stop() bool {
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

type stopped struct{}

func (stopped) Stop() bool { return false }
