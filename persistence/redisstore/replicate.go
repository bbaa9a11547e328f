package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// The durability modes (docs/contract.md §4).
const (
	// DurabilityAsync acknowledges a write once the master applied it.
	DurabilityAsync = "async"
	// DurabilityReplicated acknowledges an enqueue, a settle (Advance) or a
	// lease write only once DurabilityReplicas replicas have it (WAIT).
	DurabilityReplicated = "replicated"
)

// Defaults of the replicated mode.
const (
	DefaultDurabilityReplicas = 1
	DefaultDurabilityTimeout  = time.Second
)

// waitSpec is the WAIT sent after the writes of the replicated mode.
type waitSpec struct {
	replicas int
	timeout  time.Duration
}

// replicatedErr is the error of a write that reached fewer replicas than
// asked: the master applied it, but a failover may lose it.
func replicatedErr(got, want int) error {
	return fmt.Errorf("%w: %d of %d replicas acknowledged the write", persistence.ErrNotReplicated, got, want)
}

// runWrite sends calls that change state: in the async mode as runAll does;
// in the replicated mode each pipeline ends with WAIT on the connection that
// carried its scripts (one round trip per server), and the returned error
// wraps persistence.ErrNotReplicated when some server's WAIT counted fewer
// replicas than asked. The replies of the calls carry their own errors as
// with runAll.
func (s *Store) runWrite(ctx context.Context, calls []call) ([]*redis.Cmd, error) {
	if s.wait == nil {
		return runAll(ctx, s.rdb, calls), nil
	}
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return runWaited(ctx, s.rdb, calls, *s.wait)
	}
	// On a Cluster, the calls of one master go down one of its connections
	// with their WAIT.
	type group struct {
		c   *redis.Client
		idx []int
	}
	var groups []*group
	byNode := map[*redis.Client]*group{}
	for i, cl := range calls {
		m, err := cc.MasterForKey(ctx, cl.keys[0])
		if err != nil {
			return nil, fmt.Errorf("redisstore: find the master of %s: %w", cl.keys[0], err)
		}
		g := byNode[m]
		if g == nil {
			g = &group{c: m}
			byNode[m] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	// The masters are written in parallel, each in one round trip.
	out := make([]*redis.Cmd, len(calls))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for gi, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			part := make([]call, len(g.idx))
			for j, i := range g.idx {
				part[j] = calls[i]
			}
			cmds, err := runWaited(ctx, g.c, part, *s.wait)
			errs[gi] = err
			for j, i := range g.idx {
				out[i] = cmds[j]
			}
		}()
	}
	wg.Wait()
	var firstWaitErr error
	reload := false
	for _, cmd := range out {
		reload = reload || stale(cmd.Err())
	}
	if reload {
		// These writes bypass the Cluster client's redirects and its
		// reload on failure: have it learn the topology again (a
		// failover, a resharding) before the caller retries.
		cc.ReloadState(ctx)
	}
	for _, err := range errs {
		if err != nil {
			firstWaitErr = err
			break
		}
	}
	return out, firstWaitErr
}

// stale reports whether err may come from an outdated view of the Cluster:
// the master is gone or no longer serves the slot.
func stale(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	for _, prefix := range []string{"MOVED ", "ASK ", "CLUSTERDOWN ", "TRYAGAIN ", "READONLY ", "LOADING ", "MASTERDOWN "} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	var re redis.Error
	return !errors.As(err, &re) // a network error, a timeout
}

// runWaited is runAll with a WAIT at the end of each pipeline sent to c.
func runWaited(ctx context.Context, c redis.UniversalClient, calls []call, w waitSpec) ([]*redis.Cmd, error) {
	cmds, err := sendWaited(ctx, c, calls, w)
	var again []int
	loaded := map[*script]error{}
	for i, cmd := range cmds {
		if !isNoScript(cmd.Err()) {
			continue
		}
		sc := calls[i].s
		if _, ok := loaded[sc]; !ok {
			loaded[sc] = c.ScriptLoad(ctx, sc.src).Err()
		}
		if loaded[sc] == nil {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return cmds, err
	}
	retry := make([]call, len(again))
	for j, i := range again {
		retry[j] = calls[i]
	}
	more, err2 := sendWaited(ctx, c, retry, w)
	for j, cmd := range more {
		cmds[again[j]] = cmd
	}
	return cmds, errors.Join(err, err2)
}

// sendWaited sends the calls and WAIT in one pipeline. Its error is about
// the WAIT only: nil when no call wrote (every one failed) or when enough
// replicas acknowledged.
func sendWaited(ctx context.Context, c redis.UniversalClient, calls []call, w waitSpec) ([]*redis.Cmd, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, cl := range calls {
		cmds[i] = cl.cmd(ctx)
		_ = pipe.Process(ctx, cmds[i])
	}
	wait := pipe.Do(ctx, "WAIT", w.replicas, max(w.timeout.Milliseconds(), 1))
	_, _ = pipe.Exec(ctx) // each command carries its own error
	wrote := false
	for _, cmd := range cmds {
		if cmd.Err() == nil || errors.Is(cmd.Err(), redis.Nil) {
			wrote = true
		}
	}
	if !wrote {
		return cmds, nil
	}
	n, err := wait.Int64()
	if err != nil {
		return cmds, fmt.Errorf("%w: WAIT: %v", persistence.ErrNotReplicated, err)
	}
	if int(n) < w.replicas {
		return cmds, replicatedErr(int(n), w.replicas)
	}
	return cmds, nil
}
