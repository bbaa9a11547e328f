package orderly

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// deliveryConcat is how delivery was built before: the concatenation of
// its parts, kept as the reference of TestDelivery and BenchmarkDelivery.
func deliveryConcat(b *persistence.Batch) string {
	epoch, _, _ := strings.Cut(b.Token, "/")
	return b.ShardRef.String() + "/" + epoch + "/" + strconv.FormatInt(b.Seq, 10)
}

func TestDelivery(t *testing.T) {
	for _, b := range []*persistence.Batch{
		{ShardRef: persistence.ShardRef{Queue: "orders", Shard: 3}, Token: "17/node-a/x1y2", Seq: 42},
		{ShardRef: persistence.ShardRef{Queue: "q", Shard: 0}, Token: "1/n", Seq: 1},
		{ShardRef: persistence.ShardRef{Queue: "q", Shard: 0}, Token: "", Seq: 0},
		{ShardRef: persistence.ShardRef{Queue: strings.Repeat("long.queue-", 12), Shard: 4095}, Token: "9223372036854775807/n/z", Seq: 1<<63 - 1},
	} {
		require.Equal(t, deliveryConcat(b), delivery(b))
	}
	require.Equal(t, "orders/3/17/42", delivery(&persistence.Batch{ShardRef: persistence.ShardRef{Queue: "orders", Shard: 3}, Token: "17/node-a/x1y2", Seq: 42}))
}

// BenchmarkDelivery compares delivery with the concatenation it replaced
// (one call per batch: per job at batch size 1).
func BenchmarkDelivery(b *testing.B) {
	batch := &persistence.Batch{ShardRef: persistence.ShardRef{Queue: "orders", Shard: 3}, Token: "17/node-a/x1y2", Seq: 123456}
	for _, c := range []struct {
		name string
		f    func(*persistence.Batch) string
	}{{"concat", deliveryConcat}, {"buffer", delivery}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = c.f(batch)
			}
		})
	}
}
