package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestHeadersCostNothingWhenAbsent checks the stored bytes: a job without
// headers is written exactly as before headers existed (docs/storage.md
// section 3), and one with headers carries the record flag 16 and its
// payloads as triples.
func TestHeadersCostNothingWhenAbsent(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	clk := clock.NewSimulated(time.Unix(1_700_000_000, 0))
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: clk.Now})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	sc := func(v float64) *float64 { return &v }
	require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{
		{ID: "plain", Payload: []byte("v"), Score: sc(1)},
		{ID: "hdr", Payload: []byte("v"), Score: sc(1), Headers: map[string]string{"b": "2", "a": "1"}},
	}))
	jobs := db.Prefix + ":{q:0}:2:jobs"
	// flags 2 (fifo), at, rc, fseq, score, data: the layout 2 record of
	// the previous release, byte for byte.
	// ("1.7e+09" is how the test clock's now is sent.)
	require.Equal(t, "\x02\x071.7e+09\x02-1\x012\x011\x01v", db.Client.HGet(ctx, jobs, "plain").Val())
	// With headers: flag 16, and the payload's third field holds the
	// fields a 1 b 2.
	require.Equal(t, "\x12\x071.7e+09\x02-1\x011\x011\x01v\x08\x01a\x011\x01b\x012", db.Client.HGet(ctx, jobs, "hdr").Val())

	// A record written by the previous release decodes as before.
	require.NoError(t, db.Client.HSet(ctx, jobs, "old", "\x00\x071.7e+09\x02-1\x011\x01o").Err())
	info, err := s.GetJob(ctx, "q", "old")
	require.NoError(t, err)
	require.Equal(t, []persistence.Payload{{Data: []byte("o"), Score: 1}}, info.Queued.Payloads)
}
