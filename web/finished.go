package web

import (
	"net/http"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// listFinished serves GET /api/v1/queues/{q}/finished: a page of the
// finished records of a queue with retain_finished (docs/contract.md
// §3.14), by finished_at (rev: the latest first), merged across the
// shards.
func (s *Server) listFinished(w http.ResponseWriter, r *http.Request) error {
	opts, err := listOptions(r, persistence.OrderFinishedAt)
	if err != nil {
		return err
	}
	q := r.PathValue("q")
	page, err := s.store.ListFinished(r.Context(), q, opts)
	if err != nil {
		return err
	}
	ans := apiv1.FinishedPage{Jobs: make([]apiv1.FinishedJob, len(page.Jobs)), Next: page.Next}
	for i, f := range page.Jobs {
		ans.Jobs[i] = apiv1.NewFinishedJob(f)
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}
