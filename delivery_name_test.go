package orderly_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
)

func TestParseDelivery(t *testing.T) {
	d, err := orderly.ParseDelivery("orders/3/1795675071161/7")
	require.NoError(t, err)
	require.Equal(t, orderly.Delivery{Queue: "orders", Shard: 3, Epoch: 1795675071161, Seq: 7}, d)
	require.Equal(t, "orders/3/1795675071161/7", d.String())

	d, err = orderly.ParseDelivery("team/a/orders/0/5/1")
	require.NoError(t, err)
	require.Equal(t, orderly.Delivery{Queue: "team/a/orders", Shard: 0, Epoch: 5, Seq: 1}, d)

	for _, bad := range []string{"", "orders", "orders/1/2", "/1/2/3", "orders/x/2/3", "orders/1/-2/3", "orders/1/2/", "orders/1/2/3.5"} {
		_, err := orderly.ParseDelivery(bad)
		require.ErrorIs(t, err, orderly.ErrBadDelivery, "%q", bad)
	}
}

func FuzzParseDelivery(f *testing.F) {
	f.Add("orders/3/1795675071161/7")
	f.Add("a/b/0/0/0")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := orderly.ParseDelivery(s)
		if err != nil {
			return
		}
		again, err := orderly.ParseDelivery(d.String())
		require.NoError(t, err)
		require.Equal(t, d, again)
	})
}
