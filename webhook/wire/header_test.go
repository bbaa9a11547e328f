package wire

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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
	r.Header.Set(DeadlineHeader, FormatDeadline(d))
	got, ok := Deadline(r)
	require.True(t, ok)
	require.True(t, got.Equal(d))
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
