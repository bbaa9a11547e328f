package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/orderlyhq/orderly/persistence"
)

// Error search: the listings of queued jobs and of the morgue take
// error=<text>, which keeps the entries whose last error contains the
// text, case-insensitively. The store keeps no index of error texts, so
// the search reads the listing page by page, in the order asked for, and
// stops after maxErrorScan entries: a page answers the matches found so
// far (up to 2×limit−1 of them), how many entries it read (scanned), and
// a next cursor that continues the search where it stopped. Jobs that
// never failed have no error: ordering by retry_count with min=0 reads
// only the failed ones (an index read, like any listing page), and is what
// the dashboard asks for. BenchmarkErrorSearch measures a request that
// reads all 10,000 entries.
const (
	// maxErrorScan bounds the entries one search request reads.
	maxErrorScan = 10_000
	// maxErrorText bounds the text searched for, in bytes.
	maxErrorText = 200
)

// errorParam returns the error= text of a listing request, lower-cased; ""
// when absent.
func errorParam(r *http.Request) (string, error) {
	v := r.URL.Query()
	if !v.Has("error") {
		return "", nil
	}
	text := v.Get("error")
	switch {
	case text == "":
		return "", badField("error", "is empty: give the text to look for in last errors")
	case len(text) > maxErrorText:
		return "", badField("error", "longer than %d bytes", maxErrorText)
	}
	return strings.ToLower(text), nil
}

// withoutParam returns r with the query parameter name removed, so that
// the listing's own parameter check does not see it.
func withoutParam(r *http.Request, name string) *http.Request {
	q := r.URL.Query()
	if !q.Has(name) {
		return r
	}
	q.Del(name)
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = q.Encode()
	return r2
}

// searchErrors pages through a listing from opts and keeps the entries
// whose error (errOf) contains text. It returns the matches, the cursor
// to continue from ("" when the listing ended) and how many entries it
// read.
func searchErrors[T any](ctx context.Context, opts persistence.ListOptions, text string,
	list func(context.Context, persistence.ListOptions) ([]T, string, error), errOf func(T) string,
) (matches []T, next string, scanned int, err error) {
	limit := opts.Limit
	if limit == 0 {
		limit = persistence.DefaultListLimit
	}
	opts.Limit = limit
	for {
		items, cur, err := list(ctx, opts)
		if err != nil {
			return nil, "", scanned, err
		}
		scanned += len(items)
		for _, it := range items {
			if strings.Contains(strings.ToLower(errOf(it)), text) {
				matches = append(matches, it)
			}
		}
		if cur == "" || len(matches) >= limit || scanned >= maxErrorScan {
			return matches, cur, scanned, nil
		}
		opts.Cursor = cur
	}
}
