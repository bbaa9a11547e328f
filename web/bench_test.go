package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orderlyhq/orderly/persistence"
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
		srv.ServeHTTP(rec, httptest.NewRequest("POST", "/api/v1/queues/q/jobs", strings.NewReader(body)))
		if rec.Code != http.StatusAccepted {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "jobs/s")
}
