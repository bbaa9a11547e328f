package orderly_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
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
