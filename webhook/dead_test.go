package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/webhook/wire"
)

// ReportDead posts the dead jobs in a delivery's body, signed, and tries
// again until a 2xx answer; it gives up only when its context ends.
func TestReportDead(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []wire.Request
	var errs []error
	status := http.StatusServiceUnavailable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		defer mu.Unlock()
		var r wire.Request
		errs = append(errs, json.Unmarshal(body, &r), wire.Verify(req.Header.Get(wire.SignatureHeader), body, []byte("k"), time.Minute, time.Now()))
		if d := req.Header.Get(wire.DeliveryHeader); d != "emails/3/retries_exhausted" {
			errs = append(errs, errors.New("delivery header "+d))
		}
		bodies = append(bodies, r)
		w.WriteHeader(status)
		status = http.StatusOK // refused once, then taken
	}))
	defer srv.Close()
	s, err := New(&Config{URL: srv.URL, Secret: []byte("k")})
	require.NoError(t, err)
	defer s.Close()
	b := testBatch("a")
	b.Jobs[0].Error = "poison"
	require.NoError(t, s.ReportDead(context.Background(), "emails", 3, b.Jobs))
	mu.Lock()
	require.Len(t, bodies, 2)
	for _, e := range errs {
		require.NoError(t, e)
	}
	require.Equal(t, "emails", bodies[1].Queue)
	require.Equal(t, 3, bodies[1].Shard)
	require.Equal(t, "a", bodies[1].Jobs[0].ID)
	require.Equal(t, "poison", bodies[1].Jobs[0].Error)
	status = http.StatusInternalServerError
	mu.Unlock()

	// Always refused: it tries until its context ends.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	defer down.Close()
	s2, err := New(&Config{URL: down.URL})
	require.NoError(t, err)
	defer s2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s2.ReportDead(ctx, "emails", 3, b.Jobs), context.DeadlineExceeded)
}
