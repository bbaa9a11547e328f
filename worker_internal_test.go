package orderly

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The window a busy shard grows to: 100 ids when Prefetch is not set
// either, else a Prefetch chosen by hand stays fixed unless MaxPrefetch is
// set too.
func TestWorkerWindowDefaults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                string
		in                  Worker
		prefetch, maxWindow int
	}{
		{"defaults", Worker{}, 10, 100},
		{"prefetch by hand", Worker{Prefetch: 10}, 10, 10},
		{"prefetch 1 as Lowkiq", Worker{Prefetch: 1}, 1, 1},
		{"big batches", Worker{BatchSize: 200}, 200, 200},
		{"max prefetch only", Worker{MaxPrefetch: 50}, 10, 50},
		{"both", Worker{Prefetch: 1, MaxPrefetch: 40}, 1, 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := c.in
			w.Queue, w.Handler = "q", noop
			w = w.withDefaults()
			require.NoError(t, w.validate())
			require.Equal(t, c.prefetch, w.Prefetch)
			require.Equal(t, c.maxWindow, w.MaxPrefetch)
		})
	}
	w := (&Worker{Queue: "q", Handler: noop, Prefetch: 20, MaxPrefetch: 10}).withDefaults()
	require.ErrorContains(t, w.validate(), "MaxPrefetch must be between Prefetch (20) and 1000, got 10")
}

func noop(context.Context, *Batch) error { return nil }
