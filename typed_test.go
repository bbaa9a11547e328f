package orderly_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/orderlytest"
)

func TestHandleTyped(t *testing.T) {
	t.Parallel()
	type order struct {
		SKU string `json:"sku"`
	}
	var seen []string
	h := orderly.Handle(func(_ context.Context, j orderly.TypedJob[order]) error {
		for _, o := range j.Payloads {
			seen = append(seen, j.ID+":"+o.SKU)
		}
		if j.ID == "bad" {
			return errors.New("card declined")
		}
		return nil
	})
	b := &orderly.Batch{Queue: "orders", Jobs: []orderly.Job{
		{ID: "a", Payloads: []orderly.Payload{{Data: []byte(`{"sku":"A-1"}`)}, {Data: []byte(`{"sku":"A-2"}`)}}},
		{ID: "bad", Payloads: []orderly.Payload{{Data: []byte(`{"sku":"B-1"}`)}}},
		{ID: "garbled", Payloads: []orderly.Payload{{Data: []byte(`not json`)}}},
	}}
	err := h(context.Background(), b)
	pf, ok := orderly.AsPartialFailure(err)
	require.True(t, ok, "%v", err)
	require.Len(t, pf.Failed, 2)
	require.EqualError(t, pf.Failed["bad"], "card declined")
	require.ErrorContains(t, pf.Failed["garbled"], `payload 0 of "garbled" does not decode`)
	require.Equal(t, []string{"a:A-1", "a:A-2", "bad:B-1"}, seen, "in order; a payload that does not decode never reaches fn")

	// A single job's error is the batch's; ok jobs return nil.
	require.NoError(t, h(context.Background(), &orderly.Batch{Jobs: b.Jobs[:1]}))
	require.EqualError(t, h(context.Background(), &orderly.Batch{Jobs: b.Jobs[1:2]}), "card declined")

	// When ctx ends, the jobs left fail with its error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = h(ctx, b)
	pf, ok = orderly.AsPartialFailure(err)
	require.True(t, ok)
	require.Len(t, pf.Failed, 3)
	require.ErrorIs(t, pf.Failed["a"], context.Canceled)
}

// docs/contract.md §10: a typed handler sees each payload's headers.
func TestHandleTypedHeaders(t *testing.T) {
	t.Parallel()
	got := map[string][]map[string]string{}
	h := orderly.Handle(func(_ context.Context, j orderly.TypedJob[int]) error {
		got[j.ID] = j.Headers
		return nil
	})
	require.NoError(t, h(context.Background(), &orderly.Batch{Jobs: []orderly.Job{
		{ID: "a", Payloads: []orderly.Payload{{Data: []byte(`1`)}, {Data: []byte(`2`), Headers: map[string]string{"k": "v"}}}},
		{ID: "b", Payloads: []orderly.Payload{{Data: []byte(`3`)}}},
	}}))
	require.Equal(t, []map[string]string{nil, {"k": "v"}}, got["a"])
	require.Nil(t, got["b"])
}

// A typed handler has what an untyped one has: typed state, a timer,
// emits, the delivery and the queue, committed with the id's
// acknowledgement on a real store.
func TestHandleTypedStateTimerEmit(t *testing.T) {
	t.Parallel()
	type deposit struct {
		Amount int `json:"amount"`
	}
	type balance struct {
		Total int `json:"total"`
		Fired int `json:"fired"`
	}
	e := newEnv(t)
	var mu sync.Mutex
	var deliveries []string
	emitted := make(chan string, 16)
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "accounts", Shards: 1, State: true,
		Handler: orderly.Handle(func(_ context.Context, j orderly.TypedJob[deposit]) error {
			mu.Lock()
			deliveries = append(deliveries, j.Queue+"|"+j.Delivery)
			mu.Unlock()
			bal, ok, err := orderly.StateAs(j, orderly.JSON[balance]{})
			if err != nil {
				return err
			}
			if ok != (j.StateVersion() > 0) {
				return fmt.Errorf("state found %v at version %d", ok, j.StateVersion())
			}
			for _, d := range j.Payloads {
				bal.Total += d.Amount
			}
			if j.Timer() {
				bal.Fired++
			} else {
				j.SetTimer(time.Now().Add(50 * time.Millisecond))
				j.Emit(orderly.Emit{Queue: "audit", ID: j.ID, Payload: []byte(strconv.Itoa(bal.Total))})
			}
			return orderly.SetStateAs(j, orderly.JSON[balance]{}, bal)
		}),
	}, {
		Queue: "audit", Shards: 1,
		Handler: func(_ context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				for _, p := range j.Payloads {
					emitted <- j.ID + ":" + string(p.Data)
				}
			}
			return nil
		},
	}}})
	e.enqueue("accounts", client.Job{ID: "acct-1", Payload: []byte(`{"amount":5}`)}, client.Job{ID: "acct-1", Payload: []byte(`{"amount":7}`)})
	require.Eventually(t, func() bool {
		st, err := e.store.GetState(e.ctx, "accounts", "acct-1")
		require.NoError(t, err)
		return string(st.Data) == `{"total":12,"fired":1}`
	}, 10*time.Second, 10*time.Millisecond, "the state is typed, the timer fired once")
	select {
	case got := <-emitted:
		require.Equal(t, "acct-1:12", got)
	case <-time.After(10 * time.Second):
		t.Fatal("the emit never arrived")
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, deliveries, 2, "the payloads' call and the timer's")
	for _, d := range deliveries {
		require.Regexp(t, `^accounts\|accounts/0/\d+/\d+$`, d)
	}
	require.NotEqual(t, deliveries[0], deliveries[1])
}

func TestStateAsWithoutState(t *testing.T) {
	t.Parallel()
	var j orderly.Job
	v, ok, err := orderly.StateAs(j, orderly.JSON[int]{})
	require.NoError(t, err)
	require.False(t, ok)
	require.Zero(t, v)
	bad := orderlytest.Stateful(orderly.Job{ID: "x"}, []byte("not json"), 1)
	_, _, err = orderly.StateAs(bad, orderly.JSON[int]{})
	require.ErrorContains(t, err, "does not decode")
	require.NoError(t, orderly.SetStateAs(bad, orderly.JSON[int]{}, 42))
	require.Equal(t, "42", string(bad.State()))
}
