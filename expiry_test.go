package orderly_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/messages"
)

// A payload that expired before its fetch never reaches a handler; its id's
// other payloads do, and an id left with none is not called at all. The
// store counts the expired payloads (docs/contract.md §3.15).
func TestExpiredPayloadsNeverReachTheHandler(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	past := time.Unix(1, 0)
	var mu sync.Mutex
	got := map[string][]string{}
	var expiries []time.Time
	n := e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 2,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			for _, j := range b.Jobs {
				for _, p := range j.Payloads {
					got[j.ID] = append(got[j.ID], string(p.Data))
					expiries = append(expiries, p.ExpiresAt)
					require.NotContains(t, p.Headers, "", "the expiry is no header")
				}
			}
			return nil
		},
	}}})
	require.NoError(t, e.client.Enqueue(e.ctx, "q",
		client.Job{ID: "a", Payload: []byte("old"), Score: client.Score(1), ExpiresAt: past},
		client.Job{ID: "a", Payload: []byte("new"), Score: client.Score(2), ExpiresIn: time.Hour},
		client.Job{ID: "b", Payload: []byte("gone"), ExpiresAt: past, Headers: map[string]string{"k": "v"}},
		client.Job{ID: "c", Payload: []byte("live")},
	))
	require.Eventually(t, func() bool {
		st := e.stats("q")
		return st.Processed == 2 && st.Expired == 2 && st.Length == 0
	}, 10*time.Second, 10*time.Millisecond)

	// The actor message carries an expiry too.
	res, err := n.AskEnqueue(e.ctx, &messages.Enqueue{Queue: "q", Jobs: []*messages.Job{
		{Id: "d", Payload: []byte("late"), ExpiresAt: ptr(1.0)},
		{Id: "e", Payload: []byte("msg"), ExpiresIn: ptr(3600.0)},
	}})
	require.NoError(t, err)
	require.Nil(t, res.GetError())
	require.Eventually(t, func() bool {
		st := e.stats("q")
		return st.Processed == 3 && st.Expired == 3 && st.Length == 0
	}, 10*time.Second, 10*time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string][]string{"a": {"new"}, "c": {"live"}, "e": {"msg"}}, got)
	var with int
	for _, x := range expiries {
		if !x.IsZero() {
			with++
		}
	}
	require.Equal(t, 2, with, "a handler sees the expiry of a live payload")

	// Both ways at once is refused, as every transport does.
	err = e.client.Enqueue(e.ctx, "q", client.Job{ID: "x", ExpiresAt: past, ExpiresIn: time.Second})
	require.ErrorContains(t, err, "give expires_at or expires_in, not both")
}

// A failed call of an id with an expired payload: the retry hands over
// only the live one, and the expired one is counted once (docs/contract.md
// §3.15).
func TestExpiredPayloadCountedOnceAcrossRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var calls [][]string
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1,
		RetryIn: func(int, error) time.Duration { return 0 },
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			for _, j := range b.Jobs {
				var ps []string
				for _, p := range j.Payloads {
					ps = append(ps, string(p.Data))
				}
				calls = append(calls, ps)
			}
			if len(calls) == 1 {
				return errors.New("first call fails")
			}
			return nil
		},
	}}})
	require.NoError(t, e.client.Enqueue(e.ctx, "q",
		client.Job{ID: "f", Payload: []byte("old"), Score: client.Score(1), ExpiresAt: time.Unix(1, 0)},
		client.Job{ID: "f", Payload: []byte("new"), Score: client.Score(2)},
	))
	require.Eventually(t, func() bool {
		st := e.stats("q")
		return st.Processed == 1 && st.Length == 0
	}, 10*time.Second, 10*time.Millisecond)
	st := e.stats("q")
	require.EqualValues(t, 1, st.Expired)
	require.EqualValues(t, 1, st.Failed)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, [][]string{{"new"}, {"new"}}, calls)
}

// An emit's ExpiresIn reaches the emitted payload through the outbox and
// its relay (docs/contract.md §3.15).
func TestEmitExpiresIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	got := make(chan orderly.Payload, 1)
	start := time.Now()
	e.start(orderly.Config{Workers: []orderly.Worker{
		{Queue: "src", Shards: 1, Handler: func(ctx context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				j.Emit(orderly.Emit{Queue: "dst", ID: "d-" + j.ID, Payload: []byte("x"), ExpiresIn: time.Hour})
			}
			return nil
		}},
		{Queue: "dst", Shards: 1, Handler: func(ctx context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				got <- j.Payloads[0]
			}
			return nil
		}},
	}})
	e.enqueue("src", client.Job{ID: "a"})
	var p orderly.Payload
	select {
	case p = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the emitted job never arrived")
	}
	require.True(t, p.ExpiresAt.After(start.Add(59*time.Minute)), "expires at %v", p.ExpiresAt)
	require.Nil(t, p.Headers, "the expiry is no header")
}

func ptr[T any](v T) *T { return &v }
