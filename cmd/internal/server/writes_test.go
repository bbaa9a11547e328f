package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
)

// The write check passes on a Redis that accepts writes, without creating
// anything, and fails on a read-only replica and on one out of memory.
func TestWriteWatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := redistest.NewServer(t, redistest.Options{})
	rdb := primary.Client(t)
	w := newWriteWatch(rdb, "orderly")
	require.NoError(t, w.Check(ctx))
	n, err := rdb.DBSize(ctx).Result()
	require.NoError(t, err)
	require.Zero(t, n, "the probe creates no key")

	host, port, _ := strings.Cut(primary.Addr(), ":")
	replica := redistest.NewServer(t, redistest.Options{Args: []string{"--replicaof", host, port}})
	err = newWriteWatch(replica.Client(t), "orderly").Check(ctx)
	require.ErrorContains(t, err, "the store refuses writes: READONLY")

	full := redistest.NewServer(t, redistest.Options{Args: []string{"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"}})
	fullClient := full.Client(t)
	var refusal error
	for i := 0; i < 100 && refusal == nil; i++ {
		refusal = fullClient.Set(ctx, "k"+strconv.Itoa(i), strings.Repeat("x", 100_000), 0).Err()
	}
	require.True(t, refused(refusal), "%v", refusal)
	fw := newWriteWatch(fullClient, "orderly")
	fw.note(refusal) // as the node's writes do, through the store
	require.ErrorContains(t, fw.Check(ctx), "OOM command not allowed")
	fw.note(errors.New("a bug, not a refusal"))
	require.ErrorContains(t, fw.Check(ctx), "OOM command not allowed", "only refusals count")
}

// redisRefusal is a refusal as Redis answers it.
type redisRefusal string

func (e redisRefusal) Error() string { return string(e) }
func (redisRefusal) RedisError()     {}

// batchStore refuses the second lease of a batched renewal and records Warm.
type batchStore struct {
	persistence.Store
	warmed int
}

func (s *batchStore) RenewShards(_ context.Context, leases []persistence.Lease, _ time.Duration) []error {
	errs := make([]error, len(leases))
	errs[1] = fmt.Errorf("redisstore: renew q/1: %w", redisRefusal("READONLY You can't write against a read only replica."))
	return errs
}

func (s *batchStore) Warm(_ context.Context, conns int) error {
	s.warmed = conns
	return nil
}

// The node's batched lease renewals count as its writes: a refused one
// makes the store unwritable for the health check. The wrapper leaves the
// store's connection warm-up to the store.
func TestWriteWatchSeesBatchedRenewals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWriteWatch(redistest.NewServer(t, redistest.Options{}).Client(t), "orderly")
	inner := &batchStore{}
	st := w.Store(inner)
	require.NoError(t, w.Check(ctx))
	errs := st.RenewShards(ctx, make([]persistence.Lease, 2), time.Minute)
	require.NoError(t, errs[0])
	require.Error(t, errs[1])
	require.ErrorContains(t, w.Check(ctx), "READONLY")

	wm, ok := st.(interface {
		Warm(ctx context.Context, conns int) error
	})
	require.True(t, ok)
	require.NoError(t, wm.Warm(ctx, 12))
	require.Equal(t, 12, inner.warmed)
}

// drainStore is a store that reshards, whose drain steps are refused.
type drainStore struct {
	persistence.Store
	persistence.Resharder
}

func (drainStore) DrainShard(context.Context, persistence.Lease, int) (persistence.DrainResult, error) {
	return persistence.DrainResult{}, fmt.Errorf("redisstore: drain q/1: %w", redisRefusal("READONLY You can't write against a read only replica."))
}

// The write watch keeps a store's resharding (the node drives the drain of
// a resharded queue through the wrapped store), counts a refused drain
// step as a refused write, and adds no resharding to a store without it.
func TestWriteWatchKeepsResharder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWriteWatch(redistest.NewServer(t, redistest.Options{}).Client(t), "orderly")
	rs, ok := w.Store(drainStore{}).(persistence.Resharder)
	require.True(t, ok, "the wrapper of a store that reshards reshards")
	require.NoError(t, w.Check(ctx))
	_, err := rs.DrainShard(ctx, persistence.Lease{}, 10)
	require.Error(t, err)
	require.ErrorContains(t, w.Check(ctx), "READONLY")

	_, ok = w.Store(&batchStore{}).(persistence.Resharder)
	require.False(t, ok, "the wrapper of a store that cannot reshard cannot either")
}
