package cli

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// drainWhenResharding waits for a reshard of queue to start, then drains
// its old shards as their owners would and ends it; no node runs here.
func (n *node) drainWhenResharding(queue string) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			var sh persistence.QueueShape
			for !sh.Resharding() {
				var err error
				if sh, err = n.store.Shape(n.ctx, queue); err != nil {
					return err
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, ref := range sh.From.Refs(queue) {
				lease, _, err := n.store.AcquireShard(n.ctx, ref, "test", time.Minute)
				if err != nil {
					return err
				}
				for res := (persistence.DrainResult{}); !res.Done; {
					if res, err = n.store.DrainShard(n.ctx, lease, 100); err != nil {
						return err
					}
				}
			}
			_, err := n.store.FinishReshard(n.ctx, queue)
			return err
		}()
	}()
	return done
}

// docs/contract.md §3.17: orderly queues reshard Q --shards N starts a
// reshard and prints its progress; orderly queues shows it; another count
// while it runs fails; --wait waits for its end.
func TestQueuesReshard(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	n.enqueue("orders", newJob("a", "1"), newJob("b", "2"), newJob("c", "3"))

	require.Equal(t, "orders resharding 4 -> 6 shards: moved/left 0/3\n", n.run("queues", "reshard", "orders", "--shards", "6").ok(t))
	sh, err := n.store.Shape(n.ctx, "orders")
	require.NoError(t, err)
	require.True(t, sh.Resharding())
	require.Equal(t, 6, sh.Current.Count)
	require.Regexp(t, `orders \(resharding 4->6 moved/left 0/3\)\s+6\s+3`, n.run("queues").ok(t))
	require.Contains(t, n.run("queues", "--json").ok(t), `"reshard": {`)

	r := n.run("queues", "reshard", "orders", "--shards", "2")
	require.Equal(t, ExitError, r.code, r.stderr)
	require.Contains(t, r.stderr, "from 4 to 6 shards")

	drained := n.drainWhenResharding("orders")
	out := n.run("queues", "reshard", "--queue", "orders", "--shards", "6", "--wait").ok(t)
	require.NoError(t, <-drained)
	require.Regexp(t, regexp.MustCompile(`^orders resharding 4 -> 6 shards: moved/left \d+/\d+\n(.*\n)*orders resharded: 6 shards\n$`), out)
	require.NotContains(t, n.run("queues").ok(t), "resharding")
	require.Len(t, n.queued("orders"), 3, "every id moved, none lost")

	require.Equal(t, "orders has 6 shards already: nothing to do\n", n.run("queues", "reshard", "orders", "--shards", "6", "--wait").ok(t))
	r = n.run("queues", "reshard", "orders")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "--shards is required")
	r = n.run("queues", "reshard", "orders", "--shards", "5000")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "shards")
	r = n.run("queues", "reshard", "nope", "--shards", "2")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "unknown queue")
}
