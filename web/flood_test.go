package web_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
)

// slowStore holds every Enqueue until release is closed, and counts how
// many run at once.
type slowStore struct {
	persistence.Store
	release       chan struct{}
	running, peak atomic.Int32
}

func (s *slowStore) Enqueue(ctx context.Context, q string, jobs []persistence.NewJob) error {
	n := s.running.Add(1)
	defer s.running.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	<-s.release
	return s.Store.Enqueue(ctx, q, jobs)
}

// A flood of enqueue requests: at most MaxConcurrentEnqueues are read and
// handled at once; the others wait for a slot, and all succeed.
func TestEnqueueFloodIsBounded(t *testing.T) {
	var slow *slowStore
	e := newEnv(t, func(c *web.Config) { c.MaxConcurrentEnqueues = 4 })
	slow = &slowStore{Store: e.store, release: make(chan struct{})}
	srv, err := web.New(&web.Config{Store: slow, MaxConcurrentEnqueues: 4})
	require.NoError(t, err)
	var wg sync.WaitGroup
	codes := make([]int, 40)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", "/api/v1/queues/q/jobs", strings.NewReader(`[{"id":"a"}]`))
			rec := newRecorder()
			srv.ServeHTTP(rec, req)
			codes[i] = rec.code
		}()
	}
	require.Eventually(t, func() bool { return slow.running.Load() == 4 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.EqualValues(t, 4, slow.peak.Load(), "never more than 4 at once")
	close(slow.release)
	wg.Wait()
	for _, c := range codes {
		require.Equal(t, http.StatusAccepted, c)
	}
}

type recorder struct {
	header http.Header
	code   int
}

func newRecorder() *recorder                    { return &recorder{header: http.Header{}} }
func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *recorder) WriteHeader(code int)        { r.code = code }
