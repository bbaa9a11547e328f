package orderly

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// A handler's batch holds its own copy of every job and payload: the
// payloads of all jobs share one allocation, yet appending to one job's
// payloads never writes over the next job's, and a job without payloads has
// an empty, non-nil list. A batch of one id is built the same way.
func TestHandlerBatchJobs(t *testing.T) {
	in := &persistence.Batch{ShardRef: persistence.ShardRef{Queue: "q", Shard: 2}, Token: "7/n", Seq: 3, Jobs: []persistence.Job{
		{ID: "a", Payloads: []persistence.Payload{{Data: []byte("a1"), Score: 1}, {Data: []byte("a2"), Score: 2}}, RetryCount: -1},
		{ID: "b"},
		{ID: "c", Payloads: []persistence.Payload{{Data: []byte("c1"), Score: 3}}, RetryCount: 4, Error: "boom"},
	}}
	b := newBatch(in)
	require.Equal(t, "q/2/7/3", b.Delivery)
	require.Equal(t, []string{"a", "b", "c"}, b.IDs())
	require.Equal(t, []Payload{{Data: []byte("a1"), Score: 1}, {Data: []byte("a2"), Score: 2}}, b.Jobs[0].Payloads)
	require.NotNil(t, b.Jobs[1].Payloads)
	require.Empty(t, b.Jobs[1].Payloads)
	require.Equal(t, 4, b.Jobs[2].RetryCount)
	require.Equal(t, "boom", b.Jobs[2].Error)
	b.Jobs[0].Payloads = append(b.Jobs[0].Payloads, Payload{Data: []byte("extra")})
	b.Jobs[1].Payloads = append(b.Jobs[1].Payloads, Payload{Data: []byte("extra")})
	require.Equal(t, []Payload{{Data: []byte("c1"), Score: 3}}, b.Jobs[2].Payloads, "appending to one job's payloads leaves the next job's alone")

	for _, jobs := range [][]persistence.Job{
		{{ID: "one", Payloads: []persistence.Payload{{Data: []byte("x"), Score: 9}}, RetryCount: 2}},
		{{ID: "blank"}},
	} {
		one := newBatch(&persistence.Batch{ShardRef: persistence.ShardRef{Queue: "q"}, Token: "1/n", Seq: 1, Jobs: jobs})
		require.Len(t, one.Jobs, 1)
		require.Equal(t, jobs[0].ID, one.Jobs[0].ID)
		require.NotNil(t, one.Jobs[0].Payloads)
		require.Len(t, one.Jobs[0].Payloads, len(jobs[0].Payloads))
		require.Equal(t, jobs[0].RetryCount, one.Jobs[0].RetryCount)
		one.Jobs[0].Payloads = append(one.Jobs[0].Payloads, Payload{Data: []byte("more")}, Payload{Data: []byte("more")})
		require.Len(t, one.Jobs[0].Payloads, len(jobs[0].Payloads)+2)
	}
	if n := testing.AllocsPerRun(100, func() {
		newBatch(&persistence.Batch{ShardRef: persistence.ShardRef{Queue: "q"}, Token: "1/n", Seq: 1, Jobs: in.Jobs[2:]})
	}); n > 2 {
		t.Errorf("a batch of one id costs %v allocations, want at most 2 (the batch, its delivery name)", n)
	}
}
