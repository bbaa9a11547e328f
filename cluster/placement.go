package cluster

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/orderlyhq/orderly/persistence"
)

// placement returns the owner of each shard of queue among the eligible
// members (names): rendezvous hashing with bounded loads. Every (shard,
// member) pair gets a hash score; pairs are taken in descending score order
// and a shard goes to the first member that still has room, each member
// holding floor(shards / members) or one more. So the split is even (within
// one shard), every node computes the same placement from the same view, and a
// join or leave moves few shards besides those of the member concerned.
// Owners are "" when there is no member. shards are the queue's shard
// numbers; the owners come in their order.
func placement(queue string, nums []int, members []string) []string {
	shards := len(nums)
	owners := make([]string, shards)
	if len(members) == 0 || shards == 0 {
		return owners
	}
	type pair struct {
		score  uint64
		shard  int // index into nums
		member string
	}
	pairs := make([]pair, 0, shards*len(members))
	for s, num := range nums {
		for _, m := range members {
			pairs = append(pairs, pair{score(queue, num, m), s, m})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.member != b.member:
			return strings.Compare(a.member, b.member)
		}
		return a.shard - b.shard
	})
	// Two passes: first up to floor(shards/members) each, then the rest
	// with one more allowed, so that every member ends with the floor or
	// the ceiling.
	load := make(map[string]int, len(members))
	left := shards
	for _, limit := range []int{shards / len(members), shards/len(members) + 1} {
		for _, p := range pairs {
			if left == 0 {
				return owners
			}
			if owners[p.shard] != "" || load[p.member] >= limit {
				continue
			}
			owners[p.shard] = p.member
			load[p.member]++
			left--
		}
	}
	return owners
}

// score hashes (queue, shard, member) with FNV-1a and a splitmix64
// finalizer, so that nearby inputs spread well.
func score(queue string, shard int, member string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(queue))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(shard)))
	h.Write([]byte{0})
	h.Write([]byte(member))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// assignment returns the shards self should serve: every shard of the given
// queues (name -> shard numbers) whose owner among the eligible members of
// that queue is self.
func assignment(self string, queues map[string][]int, members []Member) []persistence.ShardRef {
	var out []persistence.ShardRef
	for q, nums := range queues {
		for i, owner := range placement(q, nums, eligible(members, q)) {
			if owner == self {
				out = append(out, persistence.ShardRef{Queue: q, Shard: nums[i]})
			}
		}
	}
	slices.SortFunc(out, persistence.ShardRef.Compare)
	return out
}

// eligible returns the names of the members that may serve queue: alive,
// not draining, not unhealthy, and serving it.
func eligible(members []Member, queue string) []string {
	var out []string
	for _, m := range members {
		if m.State == StateAlive && !m.Meta.Unhealthy && slices.Contains(m.Meta.Queues, queue) {
			out = append(out, m.Name)
		}
	}
	return out
}

// numbers returns the shard numbers 0 to n-1 of a queue of n shards that was
// never resharded.
func numbers(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
