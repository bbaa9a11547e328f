package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/queuehistory"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
)

// The per-minute history of a queue, and of every queue's totals, as
// recorded in Redis.
func TestHistory(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	rec := queuehistory.New(db.Client, queuehistory.Config{Prefix: db.Prefix, Now: func() time.Time { return t0.Add(3 * time.Minute) }})
	e := newEnv(t, func(c *web.Config) { c.History = rec })
	e.register("other", 1)
	e.register("quiet", 1)
	for i, st := range [][]persistence.QueueStats{
		{{Name: "q", Processed: 10, Failed: 1, Length: 5, Lag: 1.5}, {Name: "other", Processed: 100, Length: 1, Lag: 4}},
		{{Name: "q", Processed: 70, Failed: 3, Length: 2, MorgueLength: 1, Busy: 2, Lag: 0.5}, {Name: "other", Processed: 130, Length: 0}},
		{{Name: "q", Processed: 75, Failed: 3, Length: 2, Busy: 1}},
	} {
		require.NoError(t, rec.RecordAt(e.ctx, t0.Add(time.Duration(i+1)*time.Minute), st))
	}

	a := e.do("GET", "/api/v1/queues/q/history", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"queue":"q","minutes":[`+
		`{"t":1700000040,"processed":null,"failed":null,"length":5,"morgue_length":0,"busy":0,"lag":1.5},`+
		`{"t":1700000100,"processed":60,"failed":2,"length":2,"morgue_length":1,"busy":2,"lag":0.5},`+
		`{"t":1700000160,"processed":5,"failed":0,"length":2,"morgue_length":0,"busy":1,"lag":0}]}`+"\n", a.body)
	a = e.do("GET", "/api/v1/queues/q/history?minutes=1", "")
	require.Equal(t, `{"queue":"q","minutes":[{"t":1700000160,"processed":5,"failed":0,"length":2,"morgue_length":0,"busy":1,"lag":0}]}`+"\n", a.body)
	a = e.do("GET", "/api/v1/queues/quiet/history", "")
	require.Equal(t, `{"queue":"quiet","minutes":[]}`+"\n", a.body)

	// The totals: sums, the largest lag, and counts of the queues that
	// have them.
	a = e.do("GET", "/api/v1/history?minutes=1440", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"minutes":[`+
		`{"t":1700000040,"processed":null,"failed":null,"length":6,"morgue_length":0,"busy":0,"lag":4},`+
		`{"t":1700000100,"processed":90,"failed":2,"length":2,"morgue_length":1,"busy":2,"lag":0.5},`+
		`{"t":1700000160,"processed":5,"failed":0,"length":2,"morgue_length":0,"busy":1,"lag":0}]}`+"\n", a.body)

	for _, c := range []struct {
		path, field string
		status      int
	}{
		{"/api/v1/queues/nope/history", "queue", http.StatusNotFound},
		{"/api/v1/queues/-q/history", "queue", http.StatusBadRequest},
		{"/api/v1/queues/q/history?minutes=0", "minutes", http.StatusBadRequest},
		{"/api/v1/queues/q/history?minutes=1441", "minutes", http.StatusBadRequest},
		{"/api/v1/queues/q/history?minutes=x", "minutes", http.StatusBadRequest},
		{"/api/v1/history?since=1", "since", http.StatusBadRequest},
	} {
		a := e.do("GET", c.path, "")
		require.Equal(t, c.status, a.status, "%s: %s", c.path, a.body)
		_, field := a.errorBody(t)
		require.Equal(t, c.field, field, c.path)
	}
}

// A server without a history says so.
func TestNoHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"/api/v1/history", "/api/v1/queues/q/history"} {
		a := e.do("GET", p, "")
		require.Equal(t, http.StatusNotFound, a.status, a.body)
		require.Contains(t, a.body, "no history")
	}
}
