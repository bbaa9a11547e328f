package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

func jobOf(j persistence.Job) apiv1.Job {
	return apiv1.Job{
		PerformAt:    persistence.UnixSeconds(j.PerformAt),
		RetryCount:   j.RetryCount,
		Priority:     j.Priority,
		Error:        j.Error,
		Payloads:     apiv1.Payloads(j.Payloads),
		PayloadCount: j.PayloadCount,
	}
}

// getJob serves GET /api/v1/queues/{q}/jobs/{id...}. The id is the rest of
// the path, unescaped: ids containing '/' work escaped (%2F) or not.
func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	info, err := s.store.GetJob(r.Context(), r.PathValue("q"), id)
	if err != nil {
		return err
	}
	ans := apiv1.JobLookup{Queue: info.Queue, Shard: info.Shard, ID: id, InFlight: info.InFlight != nil, State: stateOf(info.State)}
	if !info.Timer.IsZero() {
		at := persistence.UnixSeconds(info.Timer)
		ans.Timer = &at
	}
	if info.Queued != nil {
		v := jobOf(*info.Queued)
		ans.Queued = &v
	}
	if f := info.InFlight; f != nil {
		ans.Processing = &apiv1.InFlightJob{
			Job:       jobOf(f.Job),
			Owner:     f.Owner,
			Epoch:     f.Epoch,
			Seq:       f.Seq,
			FetchedAt: persistence.UnixSeconds(f.FetchedAt),
		}
	}
	if info.Morgue != nil {
		m := morgueEntryOf(*info.Morgue)
		ans.Morgue = &m
	}
	if info.Finished != nil {
		f := apiv1.NewFinishedJob(*info.Finished)
		ans.Finished = &f
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}

func listedJobs(jobs []persistence.Job) []apiv1.ListedJob {
	out := make([]apiv1.ListedJob, len(jobs))
	for i, j := range jobs {
		out[i] = apiv1.ListedJob{ID: j.ID, Job: jobOf(j)}
	}
	return out
}

// listJobs serves GET /api/v1/queues/{q}/jobs: a page of queued jobs (not
// those in flight), by id, perform_at or retry_count. Each page costs the
// store O(log n + limit) per shard, however deep the cursor.
//
// With error=<text> it searches the last errors (search.go).
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	text, err := errorParam(r)
	if err != nil {
		return err
	}
	opts, err := listOptions(withoutParam(r, "error"), persistence.OrderPerformAt)
	if err != nil {
		return err
	}
	q := r.PathValue("q")
	if text != "" {
		jobs, next, scanned, err := searchErrors(r.Context(), opts, text,
			func(ctx context.Context, o persistence.ListOptions) ([]persistence.Job, string, error) {
				p, err := s.store.ListJobs(ctx, q, o)
				return p.Jobs, p.Next, err
			}, func(j persistence.Job) string { return j.Error })
		if err != nil {
			return err
		}
		s.writeJSON(w, r, http.StatusOK, apiv1.JobPage{Jobs: listedJobs(jobs), Next: next, Scanned: &scanned})
		return nil
	}
	page, err := s.store.ListJobs(r.Context(), q, opts)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, apiv1.JobPage{Jobs: listedJobs(page.Jobs), Next: page.Next})
	return nil
}

// deleteJob serves DELETE /api/v1/queues/{q}/jobs/{id...}: it deletes the
// queued entry of id, all its payloads. An id in flight is not touched:
// its batch is settled by its handler.
func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	if err := s.readNoBody(r); err != nil {
		return err
	}
	q, id := r.PathValue("q"), r.PathValue("id")
	ok, err := s.store.DeleteJob(r.Context(), q, id)
	if err != nil {
		return err
	}
	if !ok {
		return &apiError{status: http.StatusNotFound,
			msg: fmt.Sprintf("job %q is not queued in %q (a job in an in-flight batch is not deleted: its handler settles it)", id, q)}
	}
	s.writeJSON(w, r, http.StatusOK, apiv1.Deleted{Deleted: 1})
	return nil
}

// processing serves GET /api/v1/queues/{q}/processing: the in-flight batch
// of every shard that has one, by shard, with all their payloads.
func (s *Server) processing(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	batches, err := s.store.Processing(r.Context(), r.PathValue("q"))
	if err != nil {
		return err
	}
	slices.SortFunc(batches, func(a, b persistence.InFlightBatch) int { return a.Shard - b.Shard })
	ans := apiv1.Processing{Batches: make([]apiv1.Batch, len(batches))}
	for i, b := range batches {
		ans.Batches[i] = apiv1.Batch{
			Shard:     b.Shard,
			Owner:     b.Owner,
			Epoch:     b.Epoch,
			Seq:       b.Seq,
			FetchedAt: persistence.UnixSeconds(b.FetchedAt),
			Jobs:      listedJobs(b.Jobs),
		}
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}
