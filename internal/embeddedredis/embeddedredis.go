// Package embeddedredis runs the in-memory Redis of the quick start (miniredis)
// inside the node's process, so that `orderly` runs with nothing installed.
// Nothing it holds survives the process: it is for trying Orderly, not for
// production.
package embeddedredis

import (
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// tick is how often the server's clock catches up with the wall clock.
const tick = 100 * time.Millisecond

// Server is an in-memory Redis on 127.0.0.1.
type Server struct {
	mr   *miniredis.Miniredis
	stop chan struct{}
	wg   sync.WaitGroup // the clock goroutine
	once sync.Once
}

// Start starts a server on a free port of 127.0.0.1. miniredis expires keys
// only when told that time passed, so a goroutine advances its clock with
// the wall clock: lease TTLs behave as on a real Redis.
func Start() (*Server, error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return nil, fmt.Errorf("embedded: start in-memory store: %w", err)
	}
	s := &Server{mr: mr, stop: make(chan struct{})}
	s.wg.Add(1)
	go s.clock()
	return s, nil
}

func (s *Server) clock() {
	defer s.wg.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.mr.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Addr returns host:port of the server.
func (s *Server) Addr() string { return s.mr.Addr() }

// Close stops the server; what it held is gone.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.mr.Close()
	})
}
