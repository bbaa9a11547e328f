package server

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/redistest"
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
