package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// fakePuller records what the routes hand it and answers err.
type fakePuller struct {
	answers []*wire.Answer
	err     error
	lease   *pull.Lease
	pulls   []string // "max_ids wait" of each pull
}

func (f *fakePuller) Pull(_ context.Context, queue string, maxIDs int, wait time.Duration) (*pull.Lease, error) {
	f.pulls = append(f.pulls, fmt.Sprint(maxIDs, " ", wait))
	return f.lease, f.err
}

func (f *fakePuller) Answer(queue, lease string, a *wire.Answer) ([]string, error) {
	f.answers = append(f.answers, a)
	return nil, f.err
}

func (f *fakePuller) Extend(queue, lease string, by time.Duration) (time.Time, error) {
	return time.Unix(100, 500e6), f.err
}

func pullServer(t *testing.T, p web.Puller) *web.Server {
	t.Helper()
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	cfg := &web.Config{Store: store, Token: "admin", WorkerTokens: map[string]string{"q": "wq"}}
	if p != nil {
		cfg.Pull = p
	}
	srv, err := web.New(cfg)
	require.NoError(t, err)
	return srv
}

func pullDo(srv *web.Server, token, method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

func TestPullRoutes(t *testing.T) {
	t.Parallel()
	f := &fakePuller{}
	srv := pullServer(t, f)

	rec := pullDo(srv, "admin", "POST", "/api/v1/queues/q/pull", `{"max_ids":1,"wait":0}`)
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	f.lease = &pull.Lease{ID: "L", Deadline: time.Unix(100, 250e6), Jobs: []wire.Job{{ID: "a", RetryCount: -1}}}
	rec = pullDo(srv, "wq", "POST", "/api/v1/queues/q/pull", `{"max_ids":1,"wait":1}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.JSONEq(t, `{"lease":"L","deadline":100.25,"jobs":[{"id":"a","retry_count":-1,"perform_at":0,"payloads":[]}]}`, rec.Body.String())

	rec = pullDo(srv, "admin", "POST", "/api/v1/queues/q/pull/L/answer", ``)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rec = pullDo(srv, "admin", "POST", "/api/v1/queues/q/pull/L/answer", `{}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rec = pullDo(srv, "admin", "POST", "/api/v1/queues/q/pull/L/answer", `{"failed":{"a":"x"}}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Len(t, f.answers, 3)
	require.Nil(t, f.answers[0], "no body: every id done")
	require.Nil(t, f.answers[1], "{}: every id done")
	require.Equal(t, map[string]string{"a": "x"}, f.answers[2].Failed)

	rec = pullDo(srv, "admin", "POST", "/api/v1/queues/q/pull/L/answer", `{"nope":1}`)
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `the answer must be empty, {} or a webhook answer: the object's only members may be`)
	rec = pullDo(srv, "admin", "POST", "/api/v1/queues/q/pull/L/extend", `{"by":2}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.JSONEq(t, `{"deadline":100.5}`, rec.Body.String())

	f.err = &pull.LeaseError{Reason: pull.ReasonLost}
	rec = pullDo(srv, "admin", "POST", "/api/v1/queues/q/pull/L/answer", `{}`)
	require.Equal(t, http.StatusConflict, rec.Code)
	require.Contains(t, rec.Body.String(), `"reason":"lease lost"`)
	rec = pullDo(srv, "admin", "POST", "/api/v1/queues/q/pull/L/extend", `{"by":2}`)
	require.Equal(t, http.StatusConflict, rec.Code)

	f.err = pull.ErrStopped
	rec = pullDo(srv, "admin", "POST", "/api/v1/queues/q/pull", `{"max_ids":1,"wait":1}`)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)

	rec = pullDo(srv, "wq", "GET", "/api/v1/queues", ``)
	require.Equal(t, http.StatusForbidden, rec.Code)
	rec = pullDo(srv, "wq", "POST", "/api/v1/queues/other/pull", `{"max_ids":1,"wait":1}`)
	require.Equal(t, http.StatusForbidden, rec.Code)
}

func TestPullRoutesWithoutBroker(t *testing.T) {
	t.Parallel()
	srv := pullServer(t, nil)
	rec := pullDo(srv, "admin", "POST", "/api/v1/queues/q/pull", `{"max_ids":1,"wait":0}`)
	require.Equal(t, http.StatusNotFound, rec.Code, rec.Body.String())
}

func TestWorkerTokenMustDiffer(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	_, err = web.New(&web.Config{Store: store, Token: "same", WorkerTokens: map[string]string{"q": "same"}})
	require.Error(t, err)
}

// checkingPuller is a fakePuller that checks max_ids against a batch
// size, as the broker does.
type checkingPuller struct {
	fakePuller
	batch int
}

func (c *checkingPuller) CheckPull(queue string, maxIDs int) error {
	if maxIDs < c.batch {
		return pull.ErrMaxIDs
	}
	return nil
}

func TestPullAnswerNext(t *testing.T) {
	t.Parallel()
	f := &checkingPuller{batch: 2}
	srv := pullServer(t, f)

	// Accepted, nothing within the wait: no next.
	rec := pullDo(srv, "wq", "POST", "/api/v1/queues/q/pull/L/answer", `{"next":{"max_ids":2,"wait":0.5}}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.JSONEq(t, `{"accepted":true}`, rec.Body.String())
	require.Equal(t, []string{"2 500ms"}, f.pulls)
	require.Len(t, f.answers, 1)
	require.Nil(t, f.answers[0], "next alone: every id done")

	// Accepted with a next lease, through the worker token.
	f.lease = &pull.Lease{ID: "M", Deadline: time.Unix(100, 250e6), Jobs: []wire.Job{{ID: "b", RetryCount: 0}}}
	rec = pullDo(srv, "wq", "POST", "/api/v1/queues/q/pull/L/answer", `{"failed":{"a":"x"},"next":{"max_ids":3,"wait":0}}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.JSONEq(t, `{"accepted":true,"next":{"lease":"M","deadline":100.25,"jobs":[{"id":"b","retry_count":0,"perform_at":0,"payloads":[]}]}}`, rec.Body.String())
	require.Equal(t, []string{"2 500ms", "3 0s"}, f.pulls)
	require.Equal(t, map[string]string{"a": "x"}, f.answers[1].Failed)

	// Without next, no pull.
	rec = pullDo(srv, "wq", "POST", "/api/v1/queues/q/pull/L/answer", `{}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.JSONEq(t, `{"accepted":true}`, rec.Body.String())
	require.Len(t, f.pulls, 2)

	// Bad next values: 400, the answer not taken, no pull.
	for body, want := range map[string]string{
		`{"next":{"max_ids":1,"wait":0}}`:  `next.max_ids`,
		`{"next":{"max_ids":0,"wait":0}}`:  `next.max_ids must be at least 1`,
		`{"next":{"max_ids":2,"wait":31}}`: `next.wait must be 0 to 30 seconds`,
		`{"next":{"max_ids":2,"nope":1}}`:  `\"next\" must be`,
		`{"next":{"max_ids":2},"nope":{}}`: `the object's only members may be`,
	} {
		rec = pullDo(srv, "wq", "POST", "/api/v1/queues/q/pull/L/answer", body)
		require.Equal(t, http.StatusBadRequest, rec.Code, body+": "+rec.Body.String())
		require.Contains(t, rec.Body.String(), want, body)
	}
	require.Len(t, f.answers, 3)
	require.Len(t, f.pulls, 2)

	// A refused answer takes no next.
	f.err = &pull.LeaseError{Reason: pull.ReasonDeadline}
	rec = pullDo(srv, "wq", "POST", "/api/v1/queues/q/pull/L/answer", `{"next":{"max_ids":2,"wait":0}}`)
	require.Equal(t, http.StatusConflict, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `"reason":"deadline passed"`)
	require.Len(t, f.pulls, 2)
	require.Equal(t, time.Duration(apiv1.MaxPullWait)*time.Second, webhook.MaxPullWait)
}
