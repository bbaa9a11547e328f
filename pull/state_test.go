package pull_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
)

// A pull answer's state, emits and its bad emits behave as a webhook
// answer's: the state of a stateful queue's id is committed with its
// acknowledgement and the next lease carries it; an emit naming an id not
// in the lease is a 400 that leaves the lease valid.
func TestPullAnswerCommitsState(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.client.Enqueue(ctx, "counters", client.Job{ID: "c", Payload: []byte(`1`)}))
	l := e.pullSome(adminToken, "counters", 1)
	require.True(t, l.Jobs[0].Stateful)
	require.Zero(t, l.Jobs[0].Version)

	status, out := e.answer(adminToken, "counters", l.Lease, `{"emit":[{"from":"nope","queue":"notify","id":"n"}]}`)
	require.Equal(t, http.StatusBadRequest, status, out)
	status, out = e.answer(adminToken, "counters", l.Lease,
		`{"state":{"c":{"n":1}},"emit":[{"from":"c","queue":"notify","id":"n1","payload":{"k":1}}]}`)
	require.Equal(t, http.StatusOK, status, out)

	require.Eventually(t, func() bool {
		st, err := e.store.GetState(ctx, "counters", "c")
		return err == nil && st.Version == 1
	}, 10*time.Second, 10*time.Millisecond)
	st, err := e.store.GetState(ctx, "counters", "c")
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(st.Data))

	require.NoError(t, e.client.Enqueue(ctx, "counters", client.Job{ID: "c", Payload: []byte(`2`)}))
	l = e.pullSome(adminToken, "counters", 1)
	require.Equal(t, int64(1), l.Jobs[0].Version)
	require.JSONEq(t, `{"n":1}`, string(l.Jobs[0].State))
	status, out = e.answer(adminToken, "counters", l.Lease, `{}`)
	require.Equal(t, http.StatusOK, status, out)
}
