package queuehistory_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	history "github.com/orderlyhq/orderly/internal/queuehistory"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// t0 is a turn of the minute.
var t0 = time.Unix(1_700_000_040, 0)

func stats(q string, processed, failed, length int64, lag float64) persistence.QueueStats {
	return persistence.QueueStats{Name: q, Processed: processed, Failed: failed, Length: length, MorgueLength: 2, Busy: 1, Lag: lag}
}

// Samples become points with the counts of the minute before each; a
// minute without a sample leaves the next one uncounted, and a counter that
// went down counts from zero.
func TestReadCountsPerMinute(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	now := t0.Add(5 * time.Minute)
	r := history.New(db.Client, history.Config{Prefix: db.Prefix, Now: func() time.Time { return now }})
	for i, st := range [][]persistence.QueueStats{
		{stats("a", 100, 10, 5, 1.5), stats("b", 0, 0, 0, 0)},
		{stats("a", 160, 12, 7, 2), stats("b", 1, 0, 0, 0)},
		{stats("a", 200, 12, 3, 0.25)},
		nil, // no sample at t0+3m
		{stats("a", 250, 13, 3, 0)},
		{stats("a", 20, 1, 0, 0)}, // created again
	} {
		require.NoError(t, r.RecordAt(ctx, t0.Add(time.Duration(i)*time.Minute), st))
	}
	got, err := r.Read(ctx, []string{"a", "b", "none"}, 60)
	require.NoError(t, err)
	at := func(m int) float64 { return float64(t0.Add(time.Duration(m) * time.Minute).Unix()) }
	n := func(v int64) *int64 { return &v }
	require.Equal(t, []apiv1.Minute{
		{T: at(0), Length: 5, MorgueLength: 2, Busy: 1, Lag: 1.5},
		{T: at(1), Length: 7, MorgueLength: 2, Busy: 1, Lag: 2, Processed: n(60), Failed: n(2)},
		{T: at(2), Length: 3, MorgueLength: 2, Busy: 1, Lag: 0.25, Processed: n(40), Failed: n(0)},
		{T: at(4), Length: 3, MorgueLength: 2, Busy: 1},
		{T: at(5), MorgueLength: 2, Busy: 1, Processed: n(20), Failed: n(1)},
	}, got["a"])
	require.Len(t, got["b"], 2)
	require.Equal(t, int64(1), *got["b"][1].Processed)
	require.Empty(t, got["none"])

	// The last minute: its count comes from the sample before it, which
	// is read but not answered.
	got, err = r.Read(ctx, []string{"a"}, 1)
	require.NoError(t, err)
	require.Equal(t, []apiv1.Minute{{T: at(5), MorgueLength: 2, Busy: 1, Processed: n(20), Failed: n(1)}}, got["a"])
	got, err = r.Read(ctx, []string{"a"}, 3)
	require.NoError(t, err)
	require.Equal(t, []float64{at(4), at(5)}, []float64{got["a"][0].T, got["a"][1].T})

	for _, n := range []int{0, -1, history.MaxMinutes + 1} {
		_, err := r.Read(ctx, []string{"a"}, n)
		require.Error(t, err, "minutes %d", n)
	}
}

// Every node records each minute; the history keeps the first sample of a
// minute, and never one older than its newest.
func TestOneSampleAMinute(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	cfg := history.Config{Prefix: db.Prefix, Now: func() time.Time { return t0.Add(time.Minute) }}
	n1, n2 := history.New(db.Client, cfg), history.New(db.Client, cfg)
	require.NoError(t, n1.RecordAt(ctx, t0, []persistence.QueueStats{stats("q", 10, 0, 1, 0)}))
	require.NoError(t, n2.RecordAt(ctx, t0.Add(30*time.Second), []persistence.QueueStats{stats("q", 11, 0, 1, 0)}))
	require.NoError(t, n2.RecordAt(ctx, t0.Add(-time.Minute), []persistence.QueueStats{stats("q", 9, 0, 1, 0)}))
	require.NoError(t, n2.RecordAt(ctx, t0.Add(time.Minute), []persistence.QueueStats{stats("q", 15, 0, 1, 0)}))
	require.NoError(t, n1.RecordAt(ctx, t0.Add(time.Minute), []persistence.QueueStats{stats("q", 16, 0, 1, 0)}))
	got, err := n1.Read(ctx, []string{"q"}, 10)
	require.NoError(t, err)
	require.Len(t, got["q"], 2)
	require.Equal(t, int64(5), *got["q"][1].Processed, "15 - 10: the first samples of each minute")

	// Record takes the minute from Redis's clock: twice in a row is
	// once, or twice when the minute turned in between.
	require.NoError(t, n1.Record(ctx, []persistence.QueueStats{stats("live", 1, 0, 0, 0)}))
	require.NoError(t, n2.Record(ctx, []persistence.QueueStats{stats("live", 2, 0, 0, 0)}))
	n, err := db.Client.LLen(ctx, db.Prefix+":{live}:hist").Result()
	require.NoError(t, err)
	require.Contains(t, []int64{1, 2}, n)
}

// A queue's list keeps a day and an hour of samples and expires a while
// after its last one; its size is measured.
func TestBounded(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	end := t0.Add(time.Duration(history.Keep+100) * time.Minute)
	r := history.New(db.Client, history.Config{Prefix: db.Prefix, Now: func() time.Time { return end }})
	for m := range history.Keep + 100 {
		at := t0.Add(time.Duration(m+1) * time.Minute)
		require.NoError(t, r.RecordAt(ctx, at, []persistence.QueueStats{stats("q", int64(m)*1000, int64(m), 12345, 3.25)}))
	}
	key := db.Prefix + ":{q}:hist"
	n, err := db.Client.LLen(ctx, key).Result()
	require.NoError(t, err)
	require.EqualValues(t, history.Keep, n)
	ttl, err := db.Client.PTTL(ctx, key).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 24*time.Hour)
	require.LessOrEqual(t, ttl, history.Retention)
	got, err := r.Read(ctx, []string{"q"}, history.MaxMinutes)
	require.NoError(t, err)
	require.Len(t, got["q"], history.MaxMinutes)
	for _, p := range got["q"] {
		require.NotNil(t, p.Processed)
		require.EqualValues(t, 1000, *p.Processed)
	}
	if !db.Embedded {
		size, err := db.Client.MemoryUsage(ctx, key).Result()
		require.NoError(t, err)
		t.Logf("a queue's history of %d samples takes %d bytes in Redis (%.0f a sample)", n, size, float64(size)/float64(n))
		require.Less(t, size, int64(128<<10))
	}
}

// Run records every queue just after each turn of the minute (of a
// shorter period here), and keeps at it after a failure.
func TestRun(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := history.New(db.Client, history.Config{Prefix: db.Prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	r.SetEvery(20 * time.Millisecond)
	calls := make(chan int, 1000)
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx, func(context.Context) ([]persistence.QueueStats, error) {
			n++
			calls <- n
			if n == 1 {
				return nil, fmt.Errorf("redis: connection refused")
			}
			return []persistence.QueueStats{stats("q", int64(n), 0, 0, 0)}, nil
		})
	}()
	for c := range calls {
		if c >= 3 {
			break
		}
	}
	cancel()
	<-done
	l, err := db.Client.LLen(context.Background(), db.Prefix+":{q}:hist").Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, l, int64(1), "recorded once Stats worked")
}
