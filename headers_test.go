package orderly_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
)

// Headers given to the Go client and to the enqueue actor reach a Go
// handler as Payload.Headers, through a failed attempt and its retry
// (docs/contract.md §10).
func TestNodeHandlerSeesHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var (
		mu    sync.Mutex // guards got and tries
		got   = map[string][]map[string]string{}
		tries int
	)
	n := e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, BatchSize: 10,
		RetryIn: func(int, error) time.Duration { return 0 },
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			failed := map[string]error{}
			for _, j := range b.Jobs {
				var hs []map[string]string
				for _, p := range j.Payloads {
					hs = append(hs, p.Headers)
				}
				got[j.ID] = hs
				if j.ID == "c" && tries == 0 {
					tries++
					failed["c"] = context.DeadlineExceeded
				}
			}
			return orderly.FailIDs(failed)
		},
	}}})
	tp := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	e.enqueue("q", client.Job{ID: "c", Payload: []byte("1"), Score: client.Score(1), Headers: tp},
		client.Job{ID: "c", Payload: []byte("2"), Score: client.Score(2)})
	res, err := n.AskEnqueue(e.ctx, &messages.Enqueue{Queue: "q", Jobs: []*messages.Job{
		{Id: "m", Payload: []byte("x"), Headers: map[string]string{"tenant": "acme"}},
	}})
	require.NoError(t, err)
	require.Equal(t, int64(1), res.GetEnqueued())
	require.Eventually(t, func() bool { return e.stats("q").Processed == 2 }, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, tries)
	require.Equal(t, []map[string]string{tp, nil}, got["c"])
	require.Equal(t, []map[string]string{{"tenant": "acme"}}, got["m"])

	// Bad headers are refused with the field named.
	res, err = n.AskEnqueue(e.ctx, &messages.Enqueue{Queue: "q", Jobs: []*messages.Job{{Id: "x", Headers: map[string]string{"": "v"}}}})
	require.NoError(t, err)
	require.Equal(t, "jobs[0].headers", res.GetError().GetField())
	var fe *persistence.FieldError
	require.ErrorAs(t, e.client.Enqueue(e.ctx, "q", client.Job{ID: "x", Headers: map[string]string{"": "v"}}), &fe)
	require.Equal(t, "headers", fe.Field)
}
