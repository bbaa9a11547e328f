package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Queues as a whole: registration, notifications and the store's identity.

var queueTests = []testCase{
	{"RegisterQueue_ShardCountIsFixed", testRegisterQueue, needNone},
	{"Subscribe_NotifiesEnqueues", testSubscribe, needNone},
	{"Subscribe_NotifiesControls", testSubscribeControls, needNone},
	{"Identity_StoreIDIsStable", testStoreID, needNone},
}

func testRegisterQueue(t *testing.T, h Harness) {
	e := newEnv(t, h, 5)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "q", Shards: 5}))
	err := e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "q", Shards: 6})
	require.ErrorIs(t, err, persistence.ErrShardCountMismatch)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "other", Shards: 2}))
	specs, err := e.s.Queues(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []persistence.QueueSpec{{Name: "other", Shards: 2}, {Name: "q", Shards: 5}}, specs)
	var fe *persistence.FieldError
	require.ErrorAs(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "x", Shards: 0}), &fe)
	require.Equal(t, "shards", fe.Field)
	require.ErrorAs(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "", Shards: 1}), &fe)
	require.Equal(t, "queue", fe.Field)
}

func testSubscribe(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	sub, err := e.s.Subscribe(e.ctx, e.queue)
	require.NoError(t, err)
	defer sub.Close()
	e.enqueue(job("a", "v", 1))
	select {
	case ref := <-sub.C():
		require.Equal(t, persistence.ShardRef{Queue: e.queue, Shard: persistence.ShardOf("a", 4)}, ref)
	case <-time.After(5 * time.Second):
		t.Fatal("no notification within 5s")
	}
	require.NoError(t, sub.Close())
	require.NoError(t, sub.Close())
}

// A pause and a resume each send a controls notice to the queue's
// subscribers, so that every node applies them at once (docs/contract.md
// §9).
func testSubscribeControls(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	sub, err := e.s.Subscribe(e.ctx, e.queue)
	require.NoError(t, err)
	defer sub.Close()
	for _, paused := range []bool{true, false} {
		require.NoError(t, e.s.SetPaused(e.ctx, e.queue, paused))
		select {
		case ref := <-sub.C():
			require.Equal(t, persistence.ShardRef{Queue: e.queue, Shard: persistence.ControlsNotice}, ref, "paused %v", paused)
		case <-time.After(5 * time.Second):
			t.Fatalf("no controls notice within 5s (paused %v)", paused)
		}
	}
}

// A store's identity (persistence.Identifier) is the same on every call,
// and another namespace has another one; a store that cannot tell its
// identity answers "" (skipped).
func testStoreID(t *testing.T, h Harness) {
	ctx := context.Background()
	a := h.New(t, nil)
	id, err := a.StoreID(ctx)
	require.NoError(t, err)
	if id == "" {
		t.Skip("the store cannot tell its identity")
	}
	for range 3 {
		again, err := a.StoreID(ctx)
		require.NoError(t, err)
		require.Equal(t, id, again)
	}
	other, err := h.New(t, nil).StoreID(ctx)
	require.NoError(t, err)
	require.NotEqual(t, id, other)
}
