package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// The registry's spelling of a queue's shape (docs/storage.md section 11):
// "<count>" for a queue never resharded, else "<gen>,<base>,<count>",
// followed while a reshard runs by ";" and the drained generation the same
// way. persistence.QueueShape.String writes it. Once a reshard ended, the
// shape is followed by "|", the generation it drained and "@" the end (ms
// since the epoch): relays of entries older than the end still ask that
// generation's relay marks (retiredGen), until the next reshard starts.

// retiredGen is the generation the queue's last reshard drained, kept after
// that reshard ended (docs/storage.md section 11).
type retiredGen struct {
	gen   persistence.ShardRange // Count 0: none
	endMs int64                  // when the reshard ended, ms since the epoch
}

// relayGrace is how long after a reshard ended an outbox entry may be
// written and still have been relayed into the drained generation: the
// clocks of the node that ended the reshard and of the Redis server that
// wrote the entry may differ by this much.
const relayGrace = time.Minute

// holds reports whether an outbox entry (a stream id) may have been relayed
// into the retired generation before the reshard ended.
func (r retiredGen) holds(entry string) bool {
	if r.gen.Count == 0 {
		return false
	}
	ms, _, _ := strings.Cut(entry, "-")
	v, err := strconv.ParseInt(ms, 10, 64)
	return err != nil || v <= r.endMs+relayGrace.Milliseconds()
}

// endedShape spells the shape a reshard of sh leaves when it ends at end:
// sh.Current alone, followed by the drained generation and the end.
func endedShape(sh persistence.QueueShape, end time.Time) string {
	return persistence.QueueShape{Current: sh.Current}.String() + "|" + formatRange(sh.From) + "@" + strconv.FormatInt(end.UnixMilli(), 10)
}

func formatRange(r persistence.ShardRange) string {
	return strconv.Itoa(r.Gen) + "," + strconv.Itoa(r.Base) + "," + strconv.Itoa(r.Count)
}

// parseShape reads a queue's shape as the registry keeps it (spelled as
// persistence.QueueShape.String does, or as endedShape does).
func parseShape(v string) (persistence.QueueShape, error) {
	sh, _, err := parseShapeRetired(v)
	return sh, err
}

// parseShapeRetired is parseShape, and the generation a reshard that ended
// drained, if the registry still names it.
func parseShapeRetired(v string) (persistence.QueueShape, retiredGen, error) {
	v, old, ended := strings.Cut(v, "|")
	var ret retiredGen
	if ended {
		r, at, ok := strings.Cut(old, "@")
		var err error
		if ret.gen, err = parseRange(r); err != nil || !ok {
			return persistence.QueueShape{}, ret, fmt.Errorf("queue shape %q: bad drained generation", v+"|"+old)
		}
		if ret.endMs, err = strconv.ParseInt(at, 10, 64); err != nil {
			return persistence.QueueShape{}, ret, fmt.Errorf("queue shape %q: bad end %q", v+"|"+old, at)
		}
	}
	sh, err := parseShapeOnly(v)
	if err == nil && ended && (sh.Resharding() || ret.gen.Gen >= sh.Current.Gen || overlap(ret.gen, sh.Current)) {
		err = fmt.Errorf("queue shape %q: drained generation out of order or overlapping", v+"|"+old)
	}
	if err != nil {
		return persistence.QueueShape{}, retiredGen{}, err
	}
	return sh, ret, nil
}

func parseShapeOnly(v string) (persistence.QueueShape, error) {
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
