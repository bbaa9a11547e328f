package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web/apiv1"
)

func TestErrorSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var jobs []string
	for i := range 30 {
		jobs = append(jobs, fmt.Sprintf(`{"id": "e%d"}`, i))
	}
	e.enqueue("[" + strings.Join(jobs, ",") + "]")
	e.failDue(func(string) time.Time { return e.clock.Now().Add(time.Hour) })
	e.enqueue(`[{"id": "fresh"}]`)

	// Pages of the search, followed to the end, find every match once.
	var found []string
	query := "order=id&limit=5&error=" + url.QueryEscape("ERR-E1")
	for pages := 0; ; pages++ {
		require.Less(t, pages, 20)
		p := e.listJobs(query)
		require.NotNil(t, p.Scanned)
		require.Positive(t, *p.Scanned)
		for _, j := range p.Jobs {
			require.Contains(t, j.Error, "err-e1")
			found = append(found, j.ID)
		}
		if p.Next == "" {
			break
		}
		query = "order=id&limit=5&error=ERR-E1&cursor=" + url.QueryEscape(p.Next)
	}
	want := []string{"e1", "e10", "e11", "e12", "e13", "e14", "e15", "e16", "e17", "e18", "e19"}
	slices.Sort(found)
	require.Equal(t, want, found)

	// Failed jobs only: an index read by retry count.
	p := e.listJobs("order=retry_count&min=0&limit=100&error=err-e2")
	require.Len(t, p.Jobs, 11, "e2 and e20..e29")
	require.Equal(t, 30, *p.Scanned)
	require.Empty(t, p.Next)
	p = e.listJobs("limit=100&error=nothing-like-this")
	require.Empty(t, p.Jobs)
	require.Equal(t, 31, *p.Scanned)
	require.Nil(t, e.listJobs("limit=1").Scanned, "a plain listing has no scanned count")

	// The morgue.
	e.kill("fresh")
	a := e.do("GET", "/api/v1/queues/q/morgue?error=BOOM", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	var m apiv1.MorguePage
	require.NoError(t, json.Unmarshal([]byte(a.body), &m))
	require.Len(t, m.Entries, 1)
	require.Equal(t, "fresh", m.Entries[0].ID)
	require.Equal(t, 1, *m.Scanned)
	a = e.do("GET", "/api/v1/queues/q/morgue?error=nope", "")
	require.Contains(t, a.body, `"entries":[]`)

	for _, q := range []string{"error=", "error=" + strings.Repeat("x", 201)} {
		a := e.do("GET", "/api/v1/queues/q/jobs?"+q, "")
		require.Equal(t, http.StatusBadRequest, a.status, a.body)
		_, field := a.errorBody(t)
		require.Equal(t, "error", field)
	}
}
