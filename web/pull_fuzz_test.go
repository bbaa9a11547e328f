package web

import (
	"testing"
	"time"

	"github.com/orderlyhq/orderly/web/apiv1"
)

// FuzzPullRequest checks that the decoder of pull bodies never panics and
// accepts only max_ids >= 1 and a wait within 0..MaxPullWait seconds.
func FuzzPullRequest(f *testing.F) {
	for _, s := range []string{`{"max_ids":1,"wait":0}`, `{"max_ids":10,"wait":30}`, `{"max_ids":0}`, `{"wait":31}`,
		`{"max_ids":1,"wait":-1}`, `{"max_ids":1e9,"wait":1e-9}`, `{"max_ids":1,"x":1}`, `{} {}`, `[]`, `null`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, wait, err := decodePullRequest(body)
		if err != nil {
			return
		}
		if req.MaxIDs < 1 || wait < 0 || wait > apiv1.MaxPullWait*time.Second {
			t.Fatalf("accepted %q: %+v, wait %s", body, req, wait)
		}
	})
}
