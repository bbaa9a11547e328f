package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// reshard serves POST /api/v1/queues/{q}/reshard (docs/contract.md
// §3.17): {"shards": n} starts moving the queue to n shards and answers
// 202 with its progress; the nodes drain the old shards by themselves.
// Asking again for the running reshard's count is 202 as well; another
// count while one runs is 409; the queue's current count, with none
// running, changes nothing and answers 200.
func (s *Server) reshard(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	body, err := s.readJSONBody(r, `{"shards": n}`)
	if err != nil {
		return err
	}
	var req struct {
		Shards *int `json:"shards"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return badRequest(`want {"shards": n}: %v`, err)
	}
	if req.Shards == nil {
		return badField("shards", "required: the shard count to move the queue to")
	}
	if err := persistence.ValidateShards(*req.Shards); err != nil {
		return err
	}
	rs, ok := s.store.(persistence.Resharder)
	if !ok {
		return &apiError{status: http.StatusNotImplemented, msg: "this store cannot reshard a queue"}
	}
	q := r.PathValue("q")
	shape, err := rs.Reshard(r.Context(), q, *req.Shards)
	if err != nil {
		return err
	}
	if !shape.Resharding() {
		s.writeJSON(w, r, http.StatusOK, apiv1.Reshard{From: shape.Current.Count, To: shape.Current.Count})
		return nil
	}
	view := apiv1.Reshard{From: shape.From.Count, To: shape.Current.Count}
	if st, err := rs.ReshardStatus(r.Context(), q); err == nil && st.Shape.Resharding() {
		view = reshardOf(st)
	} else if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusAccepted, view)
	return nil
}

// reshardOf is the answer's view of a running reshard.
func reshardOf(st persistence.ReshardStatus) apiv1.Reshard {
	return apiv1.Reshard{From: st.Shape.From.Count, To: st.Shape.Current.Count,
		Moved: st.Moved, Left: st.Left, DrainedShards: st.Drained}
}

// reshardStatus returns the progress of the reshard of st's queue, nil
// when none runs. A queue's shards span more numbers than its count only
// while a reshard runs (the generations do not overlap), so the store is
// asked only then.
func (s *Server) reshardStatus(ctx context.Context, st persistence.QueueStats) (*apiv1.Reshard, error) {
	rs, ok := s.store.(persistence.Resharder)
	if !ok || st.ShardLag != nil && len(st.ShardLag) <= st.Shards {
		return nil, nil
	}
	rst, err := rs.ReshardStatus(ctx, st.Name)
	if errors.Is(err, persistence.ErrUnknownQueue) {
		return nil, nil // removed since
	}
	if err != nil || !rst.Shape.Resharding() {
		return nil, err
	}
	v := reshardOf(rst)
	return &v, nil
}
