package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

type badCodec struct{}

func (badCodec) Marshal(int) ([]byte, error)  { return nil, errors.New("no") }
func (badCodec) Unmarshal([]byte, *int) error { return errors.New("no") }

func TestTypedQueue(t *testing.T) {
	t.Parallel()
	type email struct {
		To string `json:"to"`
	}
	store, c := newTypedClient(t)
	q := client.NewQueue[email](c, "q")
	require.Equal(t, "q", q.Name())
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, "a", email{To: "ada@example.com"}))
	require.NoError(t, q.EnqueueIn(ctx, "b", email{To: "bob@example.com"}, time.Hour))
	j, err := q.Job("c", email{To: "cy@example.com"})
	require.NoError(t, err)
	j.Score = client.Score(7)
	require.NoError(t, q.EnqueueJobs(ctx, j))

	a, err := store.GetJob(ctx, "q", "a")
	require.NoError(t, err)
	require.Equal(t, `{"to":"ada@example.com"}`, string(a.Queued.Payloads[0].Data))
	b, err := store.GetJob(ctx, "q", "b")
	require.NoError(t, err)
	require.True(t, b.Queued.PerformAt.After(time.Now().Add(50*time.Minute)), "due in an hour")
	cj, err := store.GetJob(ctx, "q", "c")
	require.NoError(t, err)
	require.Equal(t, 7.0, cj.Queued.Payloads[0].Score)

	bad := client.NewQueueWith[int](c, "q", badCodec{})
	err = bad.Enqueue(ctx, "d", 1)
	require.ErrorContains(t, err, `client: encoding the payload of "d" for queue q: no`)
	_, err = store.GetJob(ctx, "q", "d")
	require.ErrorIs(t, err, persistence.ErrNotFound)
}

func newTypedClient(t *testing.T) (*redisstore.Store, *client.Client) {
	t.Helper()
	db := redistest.New(t)
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(context.Background(), persistence.QueueSpec{Name: "q", Shards: 3}))
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)
	return s, c
}
