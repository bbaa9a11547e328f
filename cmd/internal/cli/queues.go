package cli

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
)

// queuesHelp is the help of "orderly queues" itself.
var queuesHelp = help{
	Usage: []string{
		"orderly queues [list] [flags]",
		"orderly queues pause|resume Q [flags]",
		"orderly queues perform-all-now|kill-failed|delete-failed Q [flags]",
	},
	Text: `Lists the queues (like orderly stats), or acts on one queue, named as the
argument or with --queue:
  pause            no node starts a new handler call of the queue; enqueues
                   are still accepted and running calls finish (cluster-wide,
                   kept in Redis until resume)
  resume           undo pause
  perform-all-now  make every queued job due now
  kill-failed      move every queued job that failed before to the morgue
  delete-failed    delete every queued job that failed before
Run "orderly queues <command> --help" for a command's flags.`,
	Examples: []string{
		"orderly queues",
		"orderly queues pause orders",
		"orderly queues resume orders",
		"orderly queues kill-failed orders --json",
	},
}

// queueCommand is one of orderly queues' commands on one queue.
type queueCommand struct {
	name, summary string
	path          string // after /api/v1/queues/Q
	key           string // the count in the answer; empty for pause and resume
	done          string // what the plain output says it did
}

var queueCommands = []queueCommand{
	{"pause", "pause the queue cluster-wide: no new handler call starts", "/pause", "", "paused"},
	{"resume", "resume a paused queue", "/resume", "", "resumed"},
	{"perform-all-now", "make every queued job of the queue due now", "/actions/perform_all_now", "updated", "updated"},
	{"kill-failed", "move every queued job that failed before to the morgue", "/actions/kill_failed", "killed", "killed"},
	{"delete-failed", "delete every queued job that failed before", "/actions/delete_failed", "deleted", "deleted"},
}

// queues dispatches "orderly queues [list|pause|resume|...]".
func queues(e *env, args []string) int {
	if len(args) == 0 {
		return stats(e, nil)
	}
	switch args[0] {
	case "list":
		return stats(e, args[1:])
	case "-h", "-help", "--help", "help":
		usage.Write(e.stdout, queuesHelp, nil)
		return ExitOK
	}
	if len(args[0]) > 0 && args[0][0] == '-' {
		return stats(e, args) // flags of the listing: orderly queues --json
	}
	known := []string{"list"}
	for _, qc := range queueCommands {
		if qc.name == args[0] {
			return queueAction(e, qc, args[1:])
		}
		known = append(known, qc.name)
	}
	return e.report("queues", &usageError{msg: unknownCommand(args[0], known, "orderly queues --help")}, ExitUsage)
}

// queueAction runs one command on one queue.
func queueAction(e *env, qc queueCommand, args []string) int {
	name := "queues " + qc.name
	fs, c := e.flags(name, help{
		Usage: []string{fmt.Sprintf("orderly queues %s Q [flags]", qc.name), fmt.Sprintf("orderly queues %s --queue Q [flags]", qc.name)},
		Text: fmt.Sprintf(`%s%s. Prints what it did, or the API's answer
(POST /api/v1/queues/Q%s) with --json.`, string(qc.summary[0]-'a'+'A'), qc.summary[1:], qc.path),
		Examples: []string{fmt.Sprintf("orderly queues %s orders", qc.name)},
	})
	queue := fs.String("queue", "", "the queue (or give it as the argument)")
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
	var raw json.RawMessage
	if err := c.call("POST", "/api/v1/queues/"+url.PathEscape(*queue)+qc.path, nil, &raw); err != nil {
		return e.fail(name, err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	if qc.key == "" {
		fmt.Fprintf(e.stdout, "%s %s\n", *queue, qc.done)
		return ExitOK
	}
	var ans map[string]int
	if err := json.Unmarshal(raw, &ans); err != nil {
		return e.fail(name, fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	n, ok := ans[qc.key]
	if !ok {
		return e.fail(name, fmt.Errorf("the node's answer has no %q: %s", qc.key, cell(string(raw), 200)))
	}
	fmt.Fprintf(e.stdout, "%s %d\n", qc.done, n)
	return ExitOK
}
