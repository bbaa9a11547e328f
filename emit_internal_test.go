package orderly

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// collectEmits fails the ids whose emits are bad, too many, or would take
// the call over MaxEmitBytesPerCall, and keeps the others' in order.
func TestCollectEmitsLimits(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	big := []byte(strings.Repeat("x", persistence.DefaultMaxPayloadBytes))
	jobs := []Job{}
	for _, id := range []string{"ok", "failed", "many", "neg", "big1", "big2"} {
		jobs = append(jobs, Job{ID: id, em: &emitBox{}})
	}
	jobs[0].Emit(Emit{Queue: "q", ID: "a", PerformIn: time.Minute})
	jobs[1].Emit(Emit{Queue: "q", ID: "b"})
	for range MaxEmitsPerID + 1 {
		jobs[2].Emit(Emit{Queue: "q", ID: "c"})
	}
	jobs[3].Emit(Emit{Queue: "q", ID: "d", PerformIn: -time.Second})
	for range 15 {
		jobs[4].Emit(Emit{Queue: "q", ID: "e", Payload: big})
	}
	jobs[5].Emit(Emit{Queue: "q", ID: "f", Payload: big}, Emit{Queue: "q", ID: "f", Payload: big})

	var b persistence.Batch
	bad := collectEmits(&b, jobs, map[string]bool{"failed": true}, now, nil)
	require.ElementsMatch(t, []string{"many", "neg", "big2"}, keys(bad))
	require.Len(t, b.Emits, 16)
	require.Equal(t, persistence.Emit{From: "ok", Queue: "q", Job: persistence.NewJob{ID: "a", PerformAt: now.Add(time.Minute)}}, b.Emits[0])
	require.Contains(t, bad["big2"].Error(), "MaxEmitBytesPerCall")
}

func keys(m map[string]error) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
