package web

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/orderlyhq/orderly/web/apiv1"
)

// cluster serves GET /api/v1/cluster: the members (from Config.Members) and,
// for every shard of every queue, the node holding its lease (from Redis,
// the source of truth for who serves what).
func (s *Server) cluster(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	ans := apiv1.Cluster{Members: []apiv1.Member{}, Shards: []apiv1.Shard{}, EmbeddedStore: s.embedded}
	if s.isQuiet != nil {
		ans.Quiet = s.isQuiet()
	}
	if s.members != nil {
		ans.Self, ans.Members = s.members(r.Context())
		for i := range ans.Members {
			if ans.Members[i].Queues == nil {
				ans.Members[i].Queues = []string{}
			}
		}
	}
	shards, err := s.shardOwners(r.Context())
	if err != nil {
		return err
	}
	ans.Shards = shards
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}

func (s *Server) shardOwners(ctx context.Context) ([]apiv1.Shard, error) {
	specs, err := s.store.Queues(ctx)
	if err != nil {
		return nil, err
	}
	out := []apiv1.Shard{}
	for _, q := range specs {
		owners, err := s.store.ShardOwners(ctx, q.Name)
		if err != nil {
			return nil, err
		}
		for _, o := range owners {
			out = append(out, apiv1.Shard{Queue: q.Name, Shard: o.Shard, Owner: o.Owner, Epoch: o.Epoch})
		}
	}
	slices.SortFunc(out, func(a, b apiv1.Shard) int {
		if c := strings.Compare(a.Queue, b.Queue); c != 0 {
			return c
		}
		return a.Shard - b.Shard
	})
	return out, nil
}
