package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/orderlyhq/orderly/web/apiv1"
)

// reshardPoll is how often "orderly queues reshard --wait" reads the
// progress.
const reshardPoll = time.Second

var queueReshardHelp = help{
	Usage: []string{
		"orderly queues reshard Q --shards N [--wait] [flags]",
		"orderly queues reshard --queue Q --shards N [--wait] [flags]",
	},
	Text: `Changes the queue's shard count online (docs/contract.md §3.17): POST
/api/v1/queues/Q/reshard. New ids go to the new shards at once; the nodes
serving the queue move the queued ids of the old shards by themselves, in
order per id, while producers keep enqueueing. One reshard of a queue runs
at a time: asking again for the running reshard's count is harmless, another
count fails until it ends. Prints the progress ("moved/left": ids moved so
far and still to move); with --wait, again every second until the reshard
ends. With --json, the API's answer (and with --wait, the queue's answer
once it ended). orderly queues shows a running reshard's progress.`,
	Examples: []string{
		"orderly queues reshard orders --shards 16",
		"orderly queues reshard orders --shards 16 --wait",
	},
}

// queueReshard runs "orderly queues reshard Q --shards N [--wait]".
func queueReshard(e *env, args []string) int {
	const name = "queues reshard"
	fs, c := e.flags(name, queueReshardHelp)
	queue := fs.String("queue", "", "the queue (or give it as the argument)")
	shards := fs.Int("shards", 0, "the shard count to move the queue to, 1 to 4096 (required)")
	wait := fs.Bool("wait", false, "wait until the reshard ends, printing its progress every second")
	rest, code, stop := e.parseArgs(fs, args)
	if stop {
		return code
	}
	switch {
	case len(rest) > 1 || (len(rest) == 1 && *queue != "" && rest[0] != *queue):
		return e.usage(fs, "name one queue")
	case len(rest) == 1:
		*queue = rest[0]
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	if *shards == 0 {
		return e.usage(fs, "--shards is required")
	}
	body, _ := json.Marshal(map[string]int{"shards": *shards})
	var raw json.RawMessage
	if err := c.call("POST", queuePath(*queue)+"/reshard", body, &raw); err != nil {
		return e.fail(name, err)
	}
	var v apiv1.Reshard
	if err := json.Unmarshal(raw, &v); err != nil {
		return e.fail(name, fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	if c.json {
		e.printJSON(raw)
	} else if v.From == v.To {
		fmt.Fprintf(e.stdout, "%s has %d shards already: nothing to do\n", *queue, v.To)
	} else {
		printReshard(e.stdout, *queue, v)
	}
	if !*wait || v.From == v.To {
		return ExitOK
	}
	return e.waitReshard(c, *queue)
}

// waitReshard reads the queue every reshardPoll until no reshard of it
// runs, printing the progress each time.
func (e *env) waitReshard(c *conn, queue string) int {
	const name = "queues reshard"
	tick := time.NewTicker(reshardPoll)
	defer tick.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return e.fail(name, errInterrupted)
		case <-tick.C:
		}
		var raw json.RawMessage
		if err := c.call("GET", queuePath(queue), nil, &raw); err != nil {
			return e.fail(name, err)
		}
		var q apiv1.Queue
		if err := json.Unmarshal(raw, &q); err != nil {
			return e.fail(name, fmt.Errorf("the node's answer is not the expected JSON: %w", err))
		}
		switch {
		case q.Reshard != nil && !c.json:
			printReshard(e.stdout, queue, *q.Reshard)
		case q.Reshard != nil:
		case c.json:
			e.printJSON(raw)
			return ExitOK
		default:
			fmt.Fprintf(e.stdout, "%s resharded: %d shards\n", queue, q.Shards)
			return ExitOK
		}
	}
}

// printReshard prints a running reshard's progress.
func printReshard(w io.Writer, queue string, v apiv1.Reshard) {
	fmt.Fprintf(w, "%s resharding %d -> %d shards: moved/left %d/%d\n", queue, v.From, v.To, v.Moved, v.Left)
}
