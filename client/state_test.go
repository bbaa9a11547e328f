package client_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

func TestClientState(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 3}))
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)

	v, err := c.SetState(ctx, "q", "order-1", []byte(`{"paid":true}`), 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), v)
	_, err = c.SetState(ctx, "q", "order-1", []byte(`{}`), 0)
	require.ErrorIs(t, err, client.ErrVersionConflict)
	st, err := c.GetState(ctx, "q", "order-1")
	require.NoError(t, err)
	require.Equal(t, client.State{Data: []byte(`{"paid":true}`), Version: 1}, st)
	ok, err := c.DeleteState(ctx, "q", "order-1", 1)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = c.GetState(ctx, "nope", "x")
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
}

// TestFeedEndsWithItsContext cancels a Feed whose read is blocked on an
// idle feed: the sequence ends well before the read's wait (an hour here)
// and leaves no goroutine behind (goleak in TestMain).
func TestFeedEndsWithItsContext(t *testing.T) {
	defer client.SetFeedWait(time.Hour)()
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1, Stateful: true, FeedMaxLen: 10}))
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)

	blocked := func() int {
		info, err := db.Client.Info(ctx, "clients").Result()
		require.NoError(t, err)
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "blocked_clients:"); ok {
				n, err := strconv.Atoi(v)
				require.NoError(t, err)
				return n
			}
		}
		return 0
	}
	before := blocked()

	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan int)
	go func() {
		n := 0
		for _, err := range c.Feed(fctx, "q", persistence.FeedNew) {
			require.NoError(t, err)
			n++
		}
		done <- n
	}()
	require.Eventually(t, func() bool { return blocked() > before }, 10*time.Second, 5*time.Millisecond,
		"the feed's read never blocked")
	cancel()
	select {
	case n := <-done:
		require.Zero(t, n)
	case <-time.After(20 * time.Second):
		t.Fatal("Feed did not return after its context was cancelled")
	}
}
