package web

import (
	"context"
	"net/http"
	"slices"
	"strings"
)

// Member is a node of the cluster, as the answering node sees it.
type Member struct {
	Name string `json:"name"`
	// State is alive, draining or dead.
	State   string   `json:"state"`
	HTTP    string   `json:"http"`
	Actor   string   `json:"actor"`
	Queues  []string `json:"queues"`
	Version string   `json:"version,omitempty"`
}

// shardView is one shard and the node holding its lease.
type shardView struct {
	Queue string `json:"queue"`
	Shard int    `json:"shard"`
	// Owner is the name of the node holding the lease, "" when none does.
	Owner string `json:"owner"`
	Epoch int64  `json:"epoch"`
}

// clusterAnswer is the answer of GET /api/v1/cluster.
type clusterAnswer struct {
	Self    string      `json:"self"`
	Members []Member    `json:"members"`
	Shards  []shardView `json:"shards"`
}

// cluster serves GET /api/v1/cluster: the members (from Config.Members) and,
// for every shard of every queue, the node holding its lease (from Redis,
// the source of truth for who serves what).
func (s *Server) cluster(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	ans := clusterAnswer{Members: []Member{}, Shards: []shardView{}}
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

func (s *Server) shardOwners(ctx context.Context) ([]shardView, error) {
	specs, err := s.store.Queues(ctx)
	if err != nil {
		return nil, err
	}
	out := []shardView{}
	for _, q := range specs {
		owners, err := s.store.ShardOwners(ctx, q.Name)
		if err != nil {
			return nil, err
		}
		for _, o := range owners {
			out = append(out, shardView{Queue: q.Name, Shard: o.Shard, Owner: o.Owner, Epoch: o.Epoch})
		}
	}
	slices.SortFunc(out, func(a, b shardView) int {
		if c := strings.Compare(a.Queue, b.Queue); c != 0 {
			return c
		}
		return a.Shard - b.Shard
	})
	return out, nil
}
