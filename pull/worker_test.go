package pull_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// client.PullWorker extends a lease while its handler works past the
// lease's first deadline: the answer is taken, the id is done once.
func TestPullWorkerExtendsWhileItWorks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.client.Enqueue(ctx, "slow", client.Job{ID: "x", Payload: []byte(`1`)}))
	var calls, expired atomic.Int32
	wctx, stop := context.WithCancel(ctx)
	w := &client.PullWorker{URL: e.url, Queue: "slow", Token: adminToken, Wait: 200 * time.Millisecond,
		Extend: time.Second,
		Handle: func(hctx context.Context, jobs []wire.Job) (*wire.Answer, error) {
			calls.Add(1)
			select {
			case <-time.After(900 * time.Millisecond): // three first leases (300 ms)
			case <-hctx.Done():
				expired.Add(1)
			}
			stop()
			return nil, nil
		}}
	require.NoError(t, w.Run(wctx))
	require.Equal(t, int32(1), calls.Load())
	require.Zero(t, expired.Load(), "the extensions kept the lease")
	require.Eventually(t, func() bool {
		_, err := e.store.GetJob(ctx, "slow", "x")
		return err != nil
	}, 10*time.Second, 10*time.Millisecond, "acknowledged")
}
