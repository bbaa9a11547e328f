package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every request carries Orderly-Deadline: the earlier of the call's own
// deadline (its context's) and the request timeout, to the millisecond and
// never later; Deadline reads it back on the receiver's side.
func TestRequestsCarryTheirDeadline(t *testing.T) {
	t.Parallel()
	var got []time.Time
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		d, ok := Deadline(r)
		if ok {
			got = append(got, d)
		}
		w.WriteHeader(http.StatusOK)
	})
	s := newTestSender(t, &Config{URL: rcv.srv.URL, Timeout: time.Minute})

	before := time.Now()
	require.NoError(t, s.deliver(context.Background(), testBatch("a")))
	h := rcv.last(t).Header.Get(DeadlineHeader)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, h)
	d, ok := ParseDeadline(h)
	require.True(t, ok)
	require.False(t, d.Before(before.Add(time.Minute).Truncate(time.Millisecond)), "the request timeout bounds the deadline")
	require.False(t, d.After(time.Now().Add(time.Minute)))

	call := time.Now().Add(5 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), call)
	defer cancel()
	require.NoError(t, s.deliver(ctx, testBatch("a")))
	d, ok = Deadline(&http.Request{Header: rcv.last(t).Header})
	require.True(t, ok)
	require.Equal(t, call.Truncate(time.Millisecond).UTC(), d, "the call's own deadline, truncated")

	// A call deadline later than the timeout: the timeout bounds it.
	late, cancelLate := context.WithTimeout(context.Background(), time.Hour)
	defer cancelLate()
	before = time.Now()
	require.NoError(t, s.deliver(late, testBatch("a")))
	d, ok = Deadline(&http.Request{Header: rcv.last(t).Header})
	require.True(t, ok)
	require.False(t, d.Before(before.Add(time.Minute).Truncate(time.Millisecond)))
	require.False(t, d.After(time.Now().Add(time.Minute)), "the timeout, not the hour")
	require.Len(t, got, 3)
}

func TestDeadlineParsing(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	_, ok := Deadline(r)
	require.False(t, ok, "no header")
	for _, bad := range []string{"tomorrow", "2026-11-23", "2026-11-23T22:00:00", strings.Repeat("9", 100)} {
		_, ok := ParseDeadline(bad)
		require.False(t, ok, bad)
	}
	d, ok := ParseDeadline("2026-11-23T22:00:00.123+01:00")
	require.True(t, ok)
	require.Equal(t, time.Date(2026, 11, 23, 21, 0, 0, 123e6, time.UTC), d.UTC())
}

// FuzzDeadline checks that parsing never panics, and that what
// FormatDeadline writes parses back to the same instant truncated to the
// millisecond.
func FuzzDeadline(f *testing.F) {
	for _, s := range []string{"", "2026-11-23T22:00:00.123Z", "2026-11-23T22:00:00Z", "2026-11-23T22:00:00.123456789-07:00", "0000-01-01T00:00:00Z", "x"} {
		f.Add(s, int64(1_700_000_000_123_456_789))
	}
	f.Fuzz(func(t *testing.T, header string, nanos int64) {
		if d, ok := ParseDeadline(header); ok {
			// What parses formats back to something that parses.
			_, ok2 := ParseDeadline(FormatDeadline(d))
			if d.Year() >= 0 && d.Year() <= 9999 && !ok2 {
				t.Fatalf("%q parsed to %v, which does not round-trip", header, d)
			}
		}
		tm := time.Unix(0, nanos)
		back, ok := ParseDeadline(FormatDeadline(tm))
		if !ok {
			t.Fatalf("FormatDeadline(%v) = %q does not parse", tm, FormatDeadline(tm))
		}
		want := tm.UTC().Truncate(time.Millisecond)
		if !back.Equal(want) {
			t.Fatalf("FormatDeadline(%v) = %q parses to %v, want %v", tm, FormatDeadline(tm), back, want)
		}
	})
}
