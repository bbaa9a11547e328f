package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/persistence"
)

// Bounds of the engine's requests to its own actors when the caller's
// context has no earlier deadline.
const (
	statusTimeout = time.Second
	// askTimeout exceeds the enqueue actor's own bound on a request's
	// store calls (10 s), so that its answer, not this bound, ends a slow
	// request.
	askTimeout = 15 * time.Second
)

// assign makes the node serve its share of the placement and the shards it
// adopted (cluster.ServiceConfig.Assign).
func (e *Engine) assign(share, adopted []persistence.ShardRef) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.assignLocked(share, adopted)
}

// assignLocked sends the node actor its shards: share and adopted, or none
// while quiet. Called with e.mu held; it only sends a message.
func (e *Engine) assignLocked(share, adopted []persistence.ShardRef) {
	if e.state != stateRunning {
		return
	}
	e.share, e.adopted = share, adopted
	if e.quiet {
		share, adopted = nil, nil
	}
	desired := e.withoutNever(share)
	e.placed, e.desired = true, desired
	served := slices.Clone(desired)
	for _, ref := range e.withoutNever(adopted) {
		if !slices.Contains(served, ref) {
			served = append(served, ref)
		}
	}
	slices.SortFunc(served, persistence.ShardRef.Compare)
	byQueue := make(map[string]Queue, len(e.cfg.Queues))
	for _, q := range e.cfg.Queues {
		byQueue[q.Spec.Name] = q
	}
	shards := make([]shard.Config, 0, len(served))
	for _, r := range served {
		sc := byQueue[r.Queue].Shard
		sc.Ref = r
		shards = append(shards, sc)
	}
	e.sys.Root.Send(e.nodePID, node.Assign{Shards: shards})
}

// withoutNever drops the shards of the test seam e.never from refs. Called
// with e.mu held.
func (e *Engine) withoutNever(refs []persistence.ShardRef) []persistence.ShardRef {
	if len(e.never) == 0 {
		return refs
	}
	return slices.DeleteFunc(slices.Clone(refs), func(r persistence.ShardRef) bool { return e.never[r] })
}

// Quiet stops processing without stopping the node; see orderly.Node.Quiet.
func (e *Engine) Quiet(ctx context.Context) error {
	e.mu.Lock()
	if e.state != stateRunning {
		e.mu.Unlock()
		return ErrNotRunning
	}
	if e.quiet {
		e.mu.Unlock()
		return nil
	}
	e.quiet = true
	e.assignLocked(e.share, e.adopted)
	members := e.members
	e.mu.Unlock()
	e.log.Info("node quiet: shards finish their batches and are released")
	if members != nil {
		if err := members.SetMeta(ctx, func(m *cluster.Meta) { m.Draining = true }); err != nil {
			e.log.Warn("cannot advertise quiet", "err", err)
		}
	}
	return nil
}

// IsQuiet reports whether Quiet was called and Resume not since.
func (e *Engine) IsQuiet() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.quiet
}

// Resume makes a quiet node serve its shards again; see
// orderly.Node.Resume.
func (e *Engine) Resume(ctx context.Context) error {
	e.mu.Lock()
	if e.state != stateRunning {
		e.mu.Unlock()
		return ErrNotRunning
	}
	if !e.quiet {
		e.mu.Unlock()
		return nil
	}
	e.quiet = false
	members, service := e.members, e.service
	switch {
	case members != nil:
		e.placed = false // not ready until the placement loop sends the share again
	case e.ready:
		e.assignLocked(e.allShards(), nil)
	}
	e.mu.Unlock()
	e.log.Info("node resumes serving")
	if members != nil {
		if err := members.SetMeta(ctx, func(m *cluster.Meta) { m.Draining = false }); err != nil {
			e.log.Warn("cannot advertise resume", "err", err)
		}
		service.Refresh() // the placement may not have changed meanwhile
	}
	return nil
}

// Status asks the node actor for its view of the shards.
func (e *Engine) Status(ctx context.Context) (node.Status, error) {
	e.mu.Lock()
	sys, pid, st := e.sys, e.nodePID, e.state
	e.mu.Unlock()
	if st != stateRunning {
		return node.Status{}, ErrNotRunning
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	res, err := request(ctx, sys, pid, node.StatusRequest{})
	if err != nil {
		return node.Status{}, fmt.Errorf("orderly: node status: %w", err)
	}
	status, ok := res.(node.Status)
	if !ok {
		return node.Status{}, fmt.Errorf("orderly: node status: unexpected answer %T", res)
	}
	return status, nil
}

// Ready returns nil when the node serves every shard it should; see
// orderly.Node.Ready.
func (e *Engine) Ready(ctx context.Context) error {
	e.mu.Lock()
	st, quiet, ready, placed, desired, service := e.state, e.quiet, e.ready, e.placed, e.desired, e.service
	e.mu.Unlock()
	switch {
	case st != stateRunning:
		return fmt.Errorf("%w: %w", ErrNotReady, ErrNotRunning)
	case quiet:
		return fmt.Errorf("%w: quiet (processing paused)", ErrNotReady)
	case !ready:
		return fmt.Errorf("%w: the store was not reached yet", ErrNotReady)
	case !placed:
		return fmt.Errorf("%w: no placement yet", ErrNotReady)
	}
	status, err := e.Status(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	reports := make(map[persistence.ShardRef]shard.Report, len(status.Shards))
	for _, r := range status.Shards {
		reports[r.Ref] = r
	}
	serving, reason := 0, ""
	for _, ref := range desired {
		r, ok := reports[ref]
		if !ok {
			// A node actor that restarted and has not restored its
			// assignment yet serves nothing.
			return fmt.Errorf("%w: shard %s is not assigned to the node actor yet", ErrNotReady, ref)
		}
		if r.Serving {
			serving++
		} else if r.Err != "" && reason == "" {
			reason = fmt.Sprintf(" (%s: %s)", r.Ref, r.Err)
		}
	}
	if serving < len(desired) {
		return fmt.Errorf("%w: serving %d of %d shards%s", ErrNotReady, serving, len(desired), reason)
	}
	// A shard of the node's queues that no node serves (docs/contract.md
	// §2.4): the node is not ready while it lasts, even if its own share
	// is served.
	if service != nil {
		if late := service.Unserved(e.clock.Now()); len(late) > 0 {
			return fmt.Errorf("%w: no node serves shard [%s] for longer than lease_ttl + %s", ErrNotReady, strings.Join(late, " "), cluster.OrphanSlack)
		}
	}
	return nil
}

// Ask sends msg to the node's enqueue actor and returns its answer; the
// error says that no answer came (the node is not running, or ctx ended).
func (e *Engine) Ask(ctx context.Context, msg any) (any, error) {
	e.mu.Lock()
	sys, pid, st := e.sys, e.enqPID, e.state
	e.mu.Unlock()
	if st != stateRunning {
		return nil, ErrNotRunning
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	res, err := request(ctx, sys, pid, msg)
	if err != nil {
		return nil, fmt.Errorf("orderly: ask the enqueue actor: %w", err)
	}
	return res, nil
}

// SetPaused pauses or resumes a queue cluster-wide; see
// orderly.Node.PauseQueue.
func (e *Engine) SetPaused(ctx context.Context, queue string, paused bool) error {
	if err := e.store.SetPaused(ctx, queue, paused); err != nil {
		return fmt.Errorf("orderly: set paused of %s: %w", queue, err)
	}
	if !e.controls.served(queue) {
		return nil
	}
	e.controls.Set(queue, paused)
	// This node takes the change at once: once every shard actor of the
	// queue has it, no call of a paused queue starts here. Other nodes
	// take it from the store's notice.
	e.mu.Lock()
	sys, pid, st := e.sys, e.nodePID, e.state
	e.mu.Unlock()
	if st != stateRunning {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	if _, err := request(ctx, sys, pid, node.SetPause{Queue: queue, Paused: paused}); err != nil {
		e.log.Warn("the node did not take the pause at once; it follows the store's notice", "queue", queue, "paused", paused, "err", err)
	}
	return nil
}

// Paused reports whether the node holds the queue as paused; see
// orderly.Node.QueuePaused.
func (e *Engine) Paused(queue string) bool { return e.controls.Paused(queue) }
