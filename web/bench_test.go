package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/web"
)

// discardStore accepts every enqueue and keeps nothing.
type discardStore struct{ persistence.Store }

func (discardStore) Enqueue(context.Context, string, []persistence.NewJob) error { return nil }

// BenchmarkEnqueueDecode measures the enqueue endpoint without the store:
// reading, validating and decoding a body of 10,000 jobs.
func BenchmarkEnqueueDecode(b *testing.B) {
	const n = 10_000
	var sb strings.Builder
	sb.WriteString("[")
	for i := range n {
		if i > 0 {
			sb.WriteString(",\n")
		}
		fmt.Fprintf(&sb, `{"id": "order-%d", "payload": {"sku": %d, "note": "two  spaces"}, "score": %d, "perform_in": 1.5}`, i, i, i)
	}
	sb.WriteString("]")
	body := sb.String()
	srv, err := web.New(&web.Config{Store: discardStore{}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, newRequest("POST", "/api/v1/queues/q/jobs", strings.NewReader(body)))
		if rec.Code != http.StatusAccepted {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkListJobsDeepPage measures GET /api/v1/queues/{q}/jobs on a
// queue of a million jobs (5 shards, the default), fetching a page of 100
// through a cursor deep into the listing, against the first page: the cost
// must not grow with the depth (O(log n) per page: no listing loads the
// queue). Setup enqueues the jobs once, through the store, in batches; it
// runs only with -bench.
//
// Jobs are job-0000000 to job-0999999, due at distinct times in another
// order than their ids; all have retry count -1, so the retry_count order
// is one band of a million equal scores, the worst case for a cursor: its
// position is found by binary search over the whole band whatever the
// depth. The id and perform_at cursors are 900,000 jobs deep, from a
// bound; the retry_count cursor is reached by paging (a bound cannot split
// the band), 300,000 jobs deep to keep the setup short.
func BenchmarkListJobsDeepPage(b *testing.B) {
	const shards = 5
	var (
		total = 1_000_000
		batch = 10_000
		deep  = 900_000 // the position of the deep page by id and perform_at
		walk  = 300_000 // the position of the deep page by retry_count
	)
	if testing.Short() {
		// make bench-smoke: the same pages on a queue 50 times smaller, so
		// the run checks the benchmark works without filling a million jobs.
		total, batch, deep, walk = 20_000, 5_000, 18_000, 6_000
	}
	ctx := context.Background()
	rs := redistest.NewServer(b, redistest.Options{})
	clk := clock.NewSimulated(t0)
	store, err := redisstore.New(rs.Client(b), &redisstore.Config{Now: clk.Now})
	require.NoError(b, err)
	require.NoError(b, store.RegisterQueue(ctx, persistence.QueueSpec{Name: "deep", Shards: shards}))
	// perform_at of job i: t0 + (i*7919 mod total) ms, a permutation.
	performAt := func(i int) time.Time { return t0.Add(time.Duration(i*7919%total) * time.Millisecond) }
	start := time.Now()
	for from := 0; from < total; from += batch {
		jobs := make([]persistence.NewJob, batch)
		for i := range jobs {
			n := from + i
			jobs[i] = persistence.NewJob{ID: fmt.Sprintf("job-%07d", n), Payload: []byte(fmt.Sprintf(`{"n":%d}`, n)), PerformAt: performAt(n)}
		}
		require.NoError(b, store.Enqueue(ctx, "deep", jobs))
	}
	b.Logf("enqueued %d jobs in %s", total, time.Since(start).Round(time.Millisecond))
	srv, err := web.New(&web.Config{Store: store, Now: clk.Now})
	require.NoError(b, err)

	get := func(tb testing.TB, query string) (next string, first string) {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, newRequest("GET", "/api/v1/queues/deep/jobs?"+query, nil))
		if rec.Code != http.StatusOK {
			tb.Fatal(rec.Code, rec.Body.String())
		}
		var page struct {
			Jobs []struct {
				ID string `json:"id"`
			} `json:"jobs"`
			Next string `json:"next"`
		}
		require.NoError(tb, json.Unmarshal(rec.Body.Bytes(), &page))
		require.Len(tb, page.Jobs, 100)
		require.NotEmpty(tb, page.Next)
		return page.Next, page.Jobs[0].ID
	}
	// The deep cursor of each order.
	cursors := map[string]string{}
	cursors["id"], _ = get(b, fmt.Sprintf("order=id&min=job-%07d", deep-100))
	at := persistence.UnixSeconds(t0.Add(time.Duration(deep-100) * time.Millisecond))
	cursors["perform_at"], _ = get(b, fmt.Sprintf("order=perform_at&min=%.3f", at))
	start = time.Now()
	q := url.Values{"order": {"retry_count"}, "limit": {"1000"}, "payloads": {"1"}}
	for pos := 0; pos < walk; pos += 1000 {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, newRequest("GET", "/api/v1/queues/deep/jobs?"+q.Encode(), nil))
		require.Equal(b, http.StatusOK, rec.Code, rec.Body.String())
		var page struct{ Next string }
		require.NoError(b, json.Unmarshal(rec.Body.Bytes(), &page))
		require.NotEmpty(b, page.Next, "at %d", pos)
		q.Set("cursor", page.Next)
	}
	cursors["retry_count"] = q.Get("cursor")
	b.Logf("walked %d jobs by retry_count, 1000 a page, in %s", walk, time.Since(start).Round(time.Millisecond))

	for _, order := range []string{"id", "perform_at", "retry_count"} {
		for _, depth := range []string{"first", "deep"} {
			query := "order=" + order
			if depth == "deep" {
				query += "&cursor=" + url.QueryEscape(cursors[order])
			}
			b.Run(order+"/"+depth, func(b *testing.B) {
				_, first := get(b, query)
				switch {
				case depth == "deep" && order == "id":
					require.Equal(b, fmt.Sprintf("job-%07d", deep), first)
				case depth == "deep" && order == "retry_count":
					require.Equal(b, fmt.Sprintf("job-%07d", walk), first, "ties by id")
				}
				for b.Loop() {
					get(b, query)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/page")
			})
		}
	}
}

// BenchmarkErrorSearch measures one GET .../jobs?error= request that finds
// nothing: the bounded scan reads 10,000 queued jobs (of 20,000, 5
// shards) page by page in perform_at order and answers a cursor to go on.
func BenchmarkErrorSearch(b *testing.B) {
	ctx := context.Background()
	rs := redistest.NewServer(b, redistest.Options{})
	clk := clock.NewSimulated(t0)
	store, err := redisstore.New(rs.Client(b), &redisstore.Config{Now: clk.Now})
	require.NoError(b, err)
	require.NoError(b, store.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 5}))
	for from := 0; from < 20_000; from += 5_000 {
		jobs := make([]persistence.NewJob, 5_000)
		for i := range jobs {
			jobs[i] = persistence.NewJob{ID: fmt.Sprintf("job-%07d", from+i), Payload: []byte(`{"n":1}`), PerformAt: t0.Add(time.Duration(from+i) * time.Millisecond)}
		}
		require.NoError(b, store.Enqueue(ctx, "q", jobs))
	}
	srv, err := web.New(&web.Config{Store: store, Now: clk.Now})
	require.NoError(b, err)
	for _, limit := range []int{100, 1000} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, newRequest("GET", fmt.Sprintf("/api/v1/queues/q/jobs?order=perform_at&limit=%d&payloads=1&error=nothing", limit), nil))
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"scanned":10000`) {
					b.Fatal(rec.Code, rec.Body.String()[:200])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/request")
		})
	}
}
