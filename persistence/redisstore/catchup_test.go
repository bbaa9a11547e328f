package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/web"
)

// Actions, lookups and listings on a store the previous release (layout 1)
// wrote, right after a node of this release fenced its shards and before
// any Advance drained them (docs/storage.md section 8, "Actions during the
// upgrade"): each acts on what the views count, or refuses.

const upShards = 2

// upIDs returns n ids named prefix-i.
func upIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// v1Fill leaves queue "q" as nodes of the previous release would: the ids
// of dead in the morgue (their first failure exhausted their retries), the
// ids of failed queued after one failure (retry count 0, due in an hour),
// the ids of delayed queued fresh and due in an hour. No shard is held.
func v1Fill(t *testing.T, db *redistest.DB, dead, failed, delayed []string) {
	t.Helper()
	ctx := context.Background()
	old := newV1Store(db.Client, db.Prefix, nil)
	require.NoError(t, old.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: upShards}))
	fail := func(ids []string, maxRetry int) {
		jobs := make([]persistence.NewJob, len(ids))
		for i, id := range ids {
			jobs[i] = persistence.NewJob{ID: id, Payload: []byte("p-" + id)}
		}
		require.NoError(t, old.Enqueue(ctx, "q", jobs))
		for sh := range upShards {
			l, _, err := old.AcquireShard(ctx, persistence.ShardRef{Queue: "q", Shard: sh}, "old", time.Minute)
			require.NoError(t, err)
			res, err := old.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 1000, MaxRetryCount: maxRetry})
			require.NoError(t, err)
			if res.Batch != nil {
				var fs []persistence.Failure
				for _, j := range res.Batch.Jobs {
					fs = append(fs, persistence.Failure{ID: j.ID, Error: "boom", RetryAt: time.Now().Add(time.Hour)})
				}
				_, err = old.Advance(ctx, l, persistence.AdvanceRequest{Settle: res.Batch.Seq, NextSeq: 2, MaxRetryCount: maxRetry, Failures: fs})
				require.NoError(t, err)
			}
			require.NoError(t, old.ReleaseShard(ctx, l))
		}
	}
	if len(dead) > 0 {
		fail(dead, 0)
	}
	if len(failed) > 0 {
		fail(failed, 25)
	}
	jobs := make([]persistence.NewJob, len(delayed))
	for i, id := range delayed {
		jobs[i] = persistence.NewJob{ID: id, Payload: []byte("p-" + id), PerformAt: time.Now().Add(time.Hour)}
	}
	require.NoError(t, old.Enqueue(ctx, "q", jobs))
}

// upgraded opens the store with this release and, unless fence is false,
// has a node of this release take and give back every shard, as a node
// does right after it starts: the shards are fenced, nothing is drained.
func upgraded(t *testing.T, db *redistest.DB, fence bool) *redisstore.Store {
	t.Helper()
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: upShards}))
	for sh := 0; fence && sh < upShards; sh++ {
		l, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: "q", Shard: sh}, "new", time.Minute)
		require.NoError(t, err)
		require.NoError(t, s.ReleaseShard(ctx, l))
	}
	return s
}

func upStats(t *testing.T, s *redisstore.Store) persistence.QueueStats {
	t.Helper()
	st, err := s.Stats(context.Background(), "q")
	require.NoError(t, err)
	return st[0]
}

// TestMorgueActionsDuringUpgrade: 200 ids in the previous release's
// morgue; the view counts 200, and the listing, requeue-all, delete-all and
// the actions on named ids act on all of them.
func TestMorgueActionsDuringUpgrade(t *testing.T) {
	ctx := context.Background()
	dead := upIDs("d", 200)
	actions := map[string]func(s *redisstore.Store) (int, error){
		"requeue all": func(s *redisstore.Store) (int, error) { return s.RequeueMorgueAll(ctx, "q") },
		"delete all":  func(s *redisstore.Store) (int, error) { return s.DeleteMorgueAll(ctx, "q") },
		"requeue ids": func(s *redisstore.Store) (int, error) { return s.RequeueMorgue(ctx, "q", dead) },
		"delete ids":  func(s *redisstore.Store) (int, error) { return s.DeleteMorgue(ctx, "q", dead) },
	}
	for name, act := range actions {
		t.Run(name, func(t *testing.T) {
			db := redistest.New(t)
			v1Fill(t, db, dead, nil, nil)
			s := upgraded(t, db, true)
			require.EqualValues(t, 200, upStats(t, s).MorgueLength)
			page, err := s.ListMorgue(ctx, "q", persistence.ListOptions{Limit: 1000})
			require.NoError(t, err)
			require.Len(t, page.Entries, 200, "the listing shows what the view counts")
			n, err := act(s)
			require.NoError(t, err)
			require.Equal(t, 200, n, "the action acts on every entry the view counted")
			st := upStats(t, s)
			require.EqualValues(t, 0, st.MorgueLength)
			if strings.HasPrefix(name, "requeue") {
				require.EqualValues(t, 200, st.Length)
				info, err := s.GetJob(ctx, "q", "d-7")
				require.NoError(t, err)
				require.Equal(t, -1, info.Queued.RetryCount)
				require.Equal(t, "p-d-7", string(info.Queued.Payloads[0].Data))
			} else {
				require.EqualValues(t, 0, st.Length)
			}
		})
	}
}

// TestJobActionsDuringUpgrade: the previous release's queued jobs are
// found, changed and listed by every action of this release.
func TestJobActionsDuringUpgrade(t *testing.T) {
	ctx := context.Background()
	failed, delayed := upIDs("f", 30), upIDs("l", 40)
	for name, tc := range map[string]struct {
		act    func(s *redisstore.Store) (int, error)
		length int // queued ids after
		morgue int
	}{
		"perform all now": {func(s *redisstore.Store) (int, error) { return s.PerformAllNow(ctx, "q") }, 70, 0},
		"kill failed":     {func(s *redisstore.Store) (int, error) { return s.KillFailed(ctx, "q") }, 40, 30},
		"delete failed":   {func(s *redisstore.Store) (int, error) { return s.DeleteFailed(ctx, "q") }, 40, 0},
		"kill one": {func(s *redisstore.Store) (int, error) {
			ok, err := s.KillJob(ctx, "q", "l-3")
			return count(ok), err
		}, 69, 1},
		"delete one": {func(s *redisstore.Store) (int, error) {
			ok, err := s.DeleteJob(ctx, "q", "f-3")
			return count(ok), err
		}, 69, 0},
		"perform one now": {func(s *redisstore.Store) (int, error) {
			ok, err := s.PerformJobNow(ctx, "q", "l-3")
			return count(ok), err
		}, 70, 0},
	} {
		t.Run(name, func(t *testing.T) {
			db := redistest.New(t)
			v1Fill(t, db, nil, failed, delayed)
			s := upgraded(t, db, true)
			st := upStats(t, s)
			require.EqualValues(t, 70, st.Length)
			require.EqualValues(t, 30, st.Retries)
			page, err := s.ListJobs(ctx, "q", persistence.ListOptions{Limit: 1000})
			require.NoError(t, err)
			require.Len(t, page.Jobs, 70, "the listing shows what the view counts")
			n, err := tc.act(s)
			require.NoError(t, err)
			want := map[string]int{"perform all now": 70, "kill failed": 30, "delete failed": 30}[name]
			if want == 0 {
				want = 1
			}
			require.Equal(t, want, n)
			st = upStats(t, s)
			require.EqualValues(t, tc.length, st.Length)
			require.EqualValues(t, tc.morgue, st.MorgueLength)
			if strings.HasPrefix(name, "perform") {
				info, err := s.GetJob(ctx, "q", "l-3")
				require.NoError(t, err)
				require.WithinDuration(t, time.Now(), info.Queued.PerformAt, time.Minute, "due now")
			}
		})
	}
}

func count(ok bool) int {
	if ok {
		return 1
	}
	return 0
}

// TestLookupDuringUpgradeMergesLayouts: an id queued in both layouts is
// shown with the payloads of both, as the handler will get them.
func TestLookupDuringUpgradeMergesLayouts(t *testing.T) {
	ctx := context.Background()
	db := redistest.New(t)
	v1Fill(t, db, nil, nil, []string{"a"})
	s := upgraded(t, db, true)
	require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{{ID: "a", Payload: []byte("new")}}))
	info, err := s.GetJob(ctx, "q", "a")
	require.NoError(t, err)
	require.Equal(t, 2, info.Queued.PayloadCount)
	require.Equal(t, "p-a", string(info.Queued.Payloads[0].Data), "the older payload first")
}

// TestActionsRefusedOnShardsOfThePreviousRelease: while a shard holding
// layout 1 data was never served by this release (a node of the previous
// release may serve it), an action answers ErrUpgradeInProgress and
// changes nothing; a lookup still shows the id.
func TestActionsRefusedOnShardsOfThePreviousRelease(t *testing.T) {
	ctx := context.Background()
	db := redistest.New(t)
	dead := upIDs("d", 20)
	v1Fill(t, db, dead, nil, []string{"a"})
	s := upgraded(t, db, false)
	_, err := s.RequeueMorgueAll(ctx, "q")
	require.ErrorIs(t, err, persistence.ErrUpgradeInProgress)
	_, err = s.RequeueMorgue(ctx, "q", dead[:1])
	require.ErrorIs(t, err, persistence.ErrUpgradeInProgress)
	_, err = s.ListJobs(ctx, "q", persistence.ListOptions{})
	require.ErrorIs(t, err, persistence.ErrUpgradeInProgress)
	_, err = s.KillJob(ctx, "q", "a")
	require.ErrorIs(t, err, persistence.ErrUpgradeInProgress)
	st := upStats(t, s)
	require.EqualValues(t, 20, st.MorgueLength, "nothing changed")
	require.EqualValues(t, 1, st.Length)
	info, err := s.GetJob(ctx, "q", "a")
	require.NoError(t, err)
	require.Equal(t, "p-a", string(info.Queued.Payloads[0].Data))
	// An id the previous release does not hold is not held up.
	ok, err := s.KillJob(ctx, "q", "nobody")
	require.NoError(t, err)
	require.False(t, ok)
}

// TestRequeueAllDuringUpgradeOverHTTP: POST .../morgue/requeue {"all":
// true} answers what the queue view counted, and 409 with Retry-After
// while a shard of the previous release is not served by this release.
func TestRequeueAllDuringUpgradeOverHTTP(t *testing.T) {
	post := func(t *testing.T, s *redisstore.Store) (int, http.Header, string) {
		t.Helper()
		api, err := web.New(&web.Config{Store: s})
		require.NoError(t, err)
		ts := httptest.NewServer(api)
		t.Cleanup(ts.Close)
		res, err := http.Post(ts.URL+"/api/v1/queues/q/morgue/requeue", "application/json", strings.NewReader(`{"all": true}`))
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, res.Header, string(b)
	}
	dead := upIDs("d", 200)
	t.Run("fenced", func(t *testing.T) {
		db := redistest.New(t)
		v1Fill(t, db, dead, nil, nil)
		s := upgraded(t, db, true)
		require.EqualValues(t, 200, upStats(t, s).MorgueLength)
		code, _, body := post(t, s)
		require.Equal(t, http.StatusOK, code, body)
		var out struct{ Requeued int }
		require.NoError(t, json.Unmarshal([]byte(body), &out))
		require.Equal(t, 200, out.Requeued)
	})
	t.Run("not served yet", func(t *testing.T) {
		db := redistest.New(t)
		v1Fill(t, db, dead, nil, nil)
		s := upgraded(t, db, false)
		code, h, body := post(t, s)
		require.Equal(t, http.StatusConflict, code, body)
		require.Contains(t, body, "upgrade in progress")
		require.Contains(t, body, "queue q")
		require.Equal(t, "1", h.Get("Retry-After"))
		require.EqualValues(t, 200, upStats(t, s).MorgueLength)
	})
}
