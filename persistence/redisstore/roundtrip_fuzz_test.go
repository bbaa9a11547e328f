package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// FuzzPayloadRoundTrip enqueues an arbitrary id and payload into a real
// Redis and checks that lookup and fetch return exactly the same bytes.
func FuzzPayloadRoundTrip(f *testing.F) {
	f.Add("order-1", []byte(`{"state":"paid"}`), 1.0)
	f.Add("a:{b}:c", []byte{0, 0xff, '{', '}', ':', '\n'}, -3.5)
	f.Add("日本\x00", []byte{}, 0.0)
	f.Add("p:x", []byte("1:11:2"), 1e300)
	db := redistest.New(f)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(f, err)
	require.NoError(f, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	f.Fuzz(func(t *testing.T, id string, payload []byte, score float64) {
		err := s.Enqueue(ctx, "q", []persistence.NewJob{{ID: id, Payload: payload, Score: &score}})
		if !utf8.ValidString(id) || id == "" || len(id) > persistence.MaxIDBytes || score != score || score > 1e308 || score < -1e308 {
			if err != nil {
				require.ErrorIs(t, err, persistence.ErrInvalid)
				return
			}
		}
		require.NoError(t, err)
		info, err := s.GetJob(ctx, "q", id)
		require.NoError(t, err)
		require.Len(t, info.Queued.Payloads, 1)
		require.Equal(t, string(payload), string(info.Queued.Payloads[0].Data))
		require.Equal(t, score, info.Queued.Payloads[0].Score)

		l, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: "q"}, "fuzz", time.Minute)
		require.NoError(t, err)
		defer func() {
			if err := s.ReleaseShard(ctx, l); err != nil && !errors.Is(err, persistence.ErrLeaseLost) {
				t.Error(err)
			}
		}()
		res, err := s.Advance(ctx, l, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1})
		require.NoError(t, err)
		require.Equal(t, id, res.Batch.Jobs[0].ID)
		require.Equal(t, string(payload), string(res.Batch.Jobs[0].Payloads[0].Data))
		_, err = s.Advance(ctx, l, persistence.AdvanceRequest{Settle: 1, NextSeq: 2})
		require.NoError(t, err)
	})
}
