package webhook

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/webhook/wire"
)

// Every request carries Orderly-Deadline: the earlier of the call's own
// deadline (its context's) and the request timeout, to the millisecond and
// never later; wire.Deadline reads it back on the receiver's side.
func TestRequestsCarryTheirDeadline(t *testing.T) {
	t.Parallel()
	var got []time.Time
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		d, ok := wire.Deadline(r)
		if ok {
			got = append(got, d)
		}
		w.WriteHeader(http.StatusOK)
	})
	s := newTestSender(t, &Config{URL: rcv.srv.URL, Timeout: time.Minute})

	before := time.Now()
	require.NoError(t, s.Handle(context.Background(), testBatch("a")))
	h := rcv.last(t).Header.Get(wire.DeadlineHeader)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, h)
	d, ok := wire.ParseDeadline(h)
	require.True(t, ok)
	require.False(t, d.Before(before.Add(time.Minute).Truncate(time.Millisecond)), "the request timeout bounds the deadline")
	require.False(t, d.After(time.Now().Add(time.Minute)))

	call := time.Now().Add(5 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), call)
	defer cancel()
	require.NoError(t, s.Handle(ctx, testBatch("a")))
	d, ok = wire.Deadline(&http.Request{Header: rcv.last(t).Header})
	require.True(t, ok)
	require.Equal(t, call.Truncate(time.Millisecond).UTC(), d, "the call's own deadline, truncated")

	// A call deadline later than the timeout: the timeout bounds it.
	late, cancelLate := context.WithTimeout(context.Background(), time.Hour)
	defer cancelLate()
	before = time.Now()
	require.NoError(t, s.Handle(late, testBatch("a")))
	d, ok = wire.Deadline(&http.Request{Header: rcv.last(t).Header})
	require.True(t, ok)
	require.False(t, d.Before(before.Add(time.Minute).Truncate(time.Millisecond)))
	require.False(t, d.After(time.Now().Add(time.Minute)), "the timeout, not the hour")
	require.Len(t, got, 3)
}
