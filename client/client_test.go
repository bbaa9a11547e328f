package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestClientEnqueue(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: func() time.Time { return now }})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 3}))
	c, err := client.NewFromStore(s, &client.Config{Now: func() time.Time { return now }})
	require.NoError(t, err)

	require.NoError(t, c.Enqueue(ctx, "q", client.Job{ID: "a", Payload: []byte("x"), PerformIn: time.Minute}))
	info, err := s.GetJob(ctx, "q", "a")
	require.NoError(t, err)
	require.True(t, info.Queued.PerformAt.Equal(now.Add(time.Minute)))
	require.Equal(t, float64(now.Unix()), info.Queued.Payloads[0].Score)

	var fe *persistence.FieldError
	err = c.Enqueue(ctx, "q", client.Job{ID: "a"}, client.Job{ID: "b", PerformAt: now, PerformIn: time.Second})
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "perform_in", fe.Field)
	require.Equal(t, 1, fe.Index)
	require.ErrorIs(t, c.Enqueue(ctx, "nope", client.Job{ID: "a"}), persistence.ErrUnknownQueue)
}

// docs/contract.md §9: a client pauses and resumes a queue.
func TestClientPauseQueue(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)
	require.NoError(t, c.PauseQueue(ctx, "q"))
	paused, err := c.QueuePaused(ctx, "q")
	require.NoError(t, err)
	require.True(t, paused)
	ctl, err := s.Controls(ctx, "q")
	require.NoError(t, err)
	require.True(t, ctl[0].Paused)
	require.NoError(t, c.ResumeQueue(ctx, "q"))
	paused, err = c.QueuePaused(ctx, "q")
	require.NoError(t, err)
	require.False(t, paused)
	require.ErrorIs(t, c.PauseQueue(ctx, "nope"), persistence.ErrUnknownQueue)
}

// An unreachable Redis gives a clear error within the client's timeout,
// never a silent drop.
func TestClientUnreachableRedis(t *testing.T) {
	port, err := redistest.FreePort()
	require.NoError(t, err)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + itoa(port), MaxRetries: -1})
	defer rdb.Close()
	c, err := client.New(rdb, &client.Config{Timeout: 500 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	err = c.Enqueue(context.Background(), "q", client.Job{ID: "a"})
	require.ErrorContains(t, err, "client: enqueue to q")
	require.True(t, errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection refused"), "%v", err)
	require.Less(t, time.Since(start), 2*time.Second)
}

func itoa(n int) string { return fmt.Sprint(n) }

// TestClientOpenURLs enqueues through Open on a standalone server and on a
// Redis Cluster, and reads the jobs back through a store.
func TestClientOpenURLs(t *testing.T) {
	ctx := context.Background()
	t.Run("standalone", func(t *testing.T) {
		db := redistest.New(t)
		if db.Embedded {
			t.Skip("needs a real redis-server")
		}
		s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
		require.NoError(t, err)
		require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 3}))
		c, err := client.Open("redis://"+db.Addr+"/0?dial_timeout=2s", &client.Config{Prefix: db.Prefix})
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.Enqueue(ctx, "q", client.Job{ID: "a", Payload: []byte("x")}))
		_, err = s.GetJob(ctx, "q", "a")
		require.NoError(t, err)
	})
	t.Run("cluster", func(t *testing.T) {
		db := redistest.NewCluster(t)
		s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
		require.NoError(t, err)
		require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 8}))
		c, err := client.Open("redis+cluster://"+strings.Join(db.Addrs, ","), &client.Config{Prefix: db.Prefix})
		require.NoError(t, err)
		defer c.Close()
		var jobs []client.Job
		for i := range 50 {
			jobs = append(jobs, client.Job{ID: fmt.Sprint("id-", i), Payload: []byte("x")})
		}
		require.NoError(t, c.Enqueue(ctx, "q", jobs...))
		st, err := s.Stats(ctx, "q")
		require.NoError(t, err)
		require.EqualValues(t, 50, st[0].Length)
	})
	t.Run("bad URL", func(t *testing.T) {
		_, err := client.Open("redis://u:SECRET@h:1/0?nope=1", nil)
		require.ErrorContains(t, err, "unknown parameter nope")
		require.NotContains(t, err.Error(), "SECRET")
	})
}

func TestClientJobActions(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: func() time.Time { return now }})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 3}))
	c, err := client.NewFromStore(s, &client.Config{Now: func() time.Time { return now }})
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(ctx, "q",
		client.Job{ID: "a", Payload: []byte("x"), PerformIn: time.Hour},
		client.Job{ID: "b", Payload: []byte("y")}))

	require.NoError(t, c.PerformNow(ctx, "q", "a"))
	info, err := s.GetJob(ctx, "q", "a")
	require.NoError(t, err)
	require.True(t, info.Queued.PerformAt.Equal(now), info.Queued.PerformAt)

	require.NoError(t, c.Kill(ctx, "q", "b"))
	info, err = s.GetJob(ctx, "q", "b")
	require.NoError(t, err, "a lookup finds an id that is only in the morgue")
	require.Nil(t, info.Queued)
	require.NotNil(t, info.Morgue)
	page, err := s.ListMorgue(ctx, "q", persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "b", page.Entries[0].ID)

	require.ErrorIs(t, c.Kill(ctx, "q", "b"), persistence.ErrNotFound)
	require.ErrorIs(t, c.PerformNow(ctx, "q", "nope"), persistence.ErrNotFound)
	require.ErrorIs(t, c.PerformNow(ctx, "nope", "a"), persistence.ErrUnknownQueue)
	require.ErrorIs(t, c.Kill(ctx, "q", ""), persistence.ErrInvalid)
}

// docs/contract.md §10: Job.Headers reach the store with their payload;
// bad headers are refused before anything is written.
func TestClientEnqueueHeaders(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)

	h := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	require.NoError(t, c.Enqueue(ctx, "q", client.Job{ID: "a", Payload: []byte("x"), Headers: h}, client.Job{ID: "a", Payload: []byte("y")}))
	info, err := s.GetJob(ctx, "q", "a")
	require.NoError(t, err)
	require.Equal(t, h, info.Queued.Payloads[0].Headers)
	require.Nil(t, info.Queued.Payloads[1].Headers)

	var fe *persistence.FieldError
	err = c.Enqueue(ctx, "q", client.Job{ID: "b"}, client.Job{ID: "c", Headers: map[string]string{"": "v"}})
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "headers", fe.Field)
	require.Equal(t, 1, fe.Index)
	_, err = s.GetJob(ctx, "q", "b")
	require.ErrorIs(t, err, persistence.ErrNotFound)
}
