package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/orderlyhq/orderly/persistence"
)

// The registry's spelling of a queue's shape (docs/storage.md section 11):
// "<count>" for a queue never resharded, else "<gen>,<base>,<count>",
// followed while a reshard runs by ";" and the drained generation the same
// way. persistence.QueueShape.String writes it.

// parseShape reads a queue's shape as the registry keeps it (spelled as
// persistence.QueueShape.String does).
func parseShape(v string) (persistence.QueueShape, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if persistence.ValidateShards(n) != nil {
			return persistence.QueueShape{}, fmt.Errorf("shard count %q out of range", v)
		}
		return persistence.QueueShape{Current: persistence.ShardRange{Gen: 1, Count: n}}, nil
	}
	cur, from, two := strings.Cut(v, ";")
	var s persistence.QueueShape
	var err error
	if s.Current, err = parseRange(cur); err != nil {
		return persistence.QueueShape{}, fmt.Errorf("queue shape %q: %w", v, err)
	}
	if two {
		if s.From, err = parseRange(from); err != nil {
			return persistence.QueueShape{}, fmt.Errorf("queue shape %q: %w", v, err)
		}
		if s.From.Gen >= s.Current.Gen || overlap(s.From, s.Current) {
			return persistence.QueueShape{}, fmt.Errorf("queue shape %q: generations out of order or overlapping", v)
		}
	}
	return s, nil
}

func parseRange(v string) (persistence.ShardRange, error) {
	parts := strings.Split(v, ",")
	if len(parts) != 3 {
		return persistence.ShardRange{}, errors.New("want gen,base,count")
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return persistence.ShardRange{}, fmt.Errorf("bad number %q", p)
		}
		n[i] = x
	}
	r := persistence.ShardRange{Gen: n[0], Base: n[1], Count: n[2]}
	if r.Gen < 1 || persistence.ValidateShards(r.Count) != nil || r.Base+r.Count > 2*persistence.MaxShards {
		return persistence.ShardRange{}, fmt.Errorf("generation %d of shards %d..%d out of range", r.Gen, r.Base, r.Base+r.Count-1)
	}
	return r, nil
}

func overlap(a, b persistence.ShardRange) bool {
	return a.Base < b.Base+b.Count && b.Base < a.Base+a.Count
}

// nextShape returns the shape a reshard of s to count shards starts: the
// next generation, on the lowest shard numbers that no shard of s.Current
// uses, draining s.Current.
func nextShape(s persistence.QueueShape, count int) persistence.QueueShape {
	base := 0
	if count > s.Current.Base {
		base = s.Current.Base + s.Current.Count
	}
	return persistence.QueueShape{
		Current: persistence.ShardRange{Gen: s.Current.Gen + 1, Base: base, Count: count},
		From:    s.Current,
	}
}
