package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// queuesHelp is the help of "orderly queues" itself.
var queuesHelp = help{
	Usage: []string{
		"orderly queues [list] [flags]",
		"orderly queues pause|resume Q [flags]",
		"orderly queues reshard Q --shards N [--wait] [flags]",
		"orderly queues perform-all-now --queue Q [flags]",
		"orderly queues kill-failed     --queue Q [--yes] [flags]",
		"orderly queues delete-failed   --queue Q [--yes] [flags]",
	},
	Text: `Lists the queues (name, shards, queued, in flight, morgue; paused ones are
marked, resharding ones show their progress), pauses or resumes one
cluster-wide (docs/contract.md §9: a paused queue accepts enqueues, no node
starts a new handler call of it, running calls finish; kept in Redis until
resume), changes its shard count online (reshard, docs/contract.md §3.17),
or runs a queue action
(docs/contract.md §3.9): make every queued job due now, move every failed job
(retry count >= 0) to the morgue with all its payloads, or delete every
failed job. Calls in flight are never touched. Run
"orderly queues <command> --help" for a command's flags.`,
	Examples: []string{
		"orderly queues",
		"orderly queues pause orders",
		"orderly queues resume orders",
		"orderly queues reshard orders --shards 16 --wait",
		"orderly queues kill-failed --queue orders --yes",
	},
}

// queuesCommands are the commands of orderly queues.
var queuesCommands = []string{"list", "pause", "resume", "reshard", "perform-all-now", "kill-failed", "delete-failed"}

// queues dispatches "orderly queues [list|perform-all-now|kill-failed|delete-failed]".
func queues(e *env, args []string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "-help" && args[0] != "--help" {
		return queuesList(e, args)
	}
	switch args[0] {
	case "list":
		return queuesList(e, args[1:])
	case "pause", "resume":
		return queuePause(e, args[0], args[1:])
	case "reshard":
		return queueReshard(e, args[1:])
	case "perform-all-now", "kill-failed", "delete-failed":
		return queueAction(e, args[0], args[1:])
	case "-h", "-help", "--help", "help":
		usage.Write(e.stdout, queuesHelp, nil)
		return ExitOK
	}
	return e.report("queues", &usageError{msg: unknownCommand(args[0], queuesCommands, "orderly queues --help")}, ExitUsage)
}

var queuesListHelp = help{
	Usage: []string{"orderly queues [list] [flags]"},
	Text: `Lists the queues the cluster knows (GET /api/v1/queues): each name with its
shard count, queued ids, ids in flight and morgue entries; a queue being
resharded shows "(resharding A->B moved/left M/L)" after its name, and its
shard count is B, the count new ids use. orderly stats
shows every metric. With --json, the API's answer.`,
	Examples: []string{"orderly queues", "orderly queues list --json"},
}

// queuesList prints the queues.
func queuesList(e *env, args []string) int {
	fs, c := e.flags("queues list", queuesListHelp)
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	var raw json.RawMessage
	if err := c.call("GET", "/api/v1/queues", nil, &raw); err != nil {
		return e.fail("queues list", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var ans apiv1.Queues
	if err := json.Unmarshal(raw, &ans); err != nil {
		return e.fail("queues list", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	if len(ans.Queues) == 0 {
		fmt.Fprintln(e.stdout, "no queues")
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tSHARDS\tQUEUED\tIN FLIGHT\tMORGUE")
	for _, q := range ans.Queues {
		name := cell(q.Name, 64)
		if q.Paused {
			name += " (paused)"
		}
		if r := q.Reshard; r != nil {
			name += fmt.Sprintf(" (resharding %d->%d moved/left %d/%d)", r.From, r.To, r.Moved, r.Left)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", name, q.Shards, q.Length, q.Busy, q.MorgueLength)
	}
	tw.Flush()
	return ExitOK
}

// queueActions describes the queue actions: the API's name, the answer's
// key, what they print and whether they need a confirmation.
var queueActions = map[string]struct {
	api, key, done, text string
	confirm              bool
}{
	"perform-all-now": {"perform_all_now", "updated", "updated", `Makes every queued job due later due now (its retry count and error kept).`, false},
	"kill-failed": {"kill_failed", "killed", "killed",
		`Moves every queued job that failed before (retry count >= 0) to the morgue
with all its payloads and its last error.`, true},
	"delete-failed": {"delete_failed", "deleted", "deleted",
		`Deletes every queued job that failed before (retry count >= 0), with all its
payloads. This cannot be undone.`, true},
}

func queueActionHelp(action string) help {
	a := queueActions[action]
	u := fmt.Sprintf("orderly queues %s --queue Q [flags]", action)
	text := a.text + fmt.Sprintf(`

Runs POST /api/v1/queues/Q/actions/%s, synchronously: prints "%s N"
(the ids changed), or the API's answer with --json. Calls in flight are not
touched.`, a.api, a.done)
	if a.confirm {
		u = fmt.Sprintf("orderly queues %s --queue Q [--yes] [flags]", action)
		text += ` It asks for confirmation when stdin is a terminal, and needs
--yes when it is not.`
	}
	return help{Usage: []string{u}, Text: text,
		Examples: []string{fmt.Sprintf("orderly queues %s --queue orders", action)}}
}

// queueAction runs a queue action.
func queueAction(e *env, action string, args []string) int {
	name := "queues " + action
	a := queueActions[action]
	fs, c := e.flags(name, queueActionHelp(action))
	queue := fs.String("queue", "", "queue to act on (required)")
	var yes *bool
	if a.confirm {
		yes = fs.Bool("yes", false, "do not ask for confirmation")
	}
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	if a.confirm && !*yes {
		if !e.stdinTTY {
			return e.usage(fs, "%s changes every failed job of %s; confirm with --yes (stdin is not a terminal to ask)", action, *queue)
		}
		verb, _, _ := strings.Cut(action, "-")
		fmt.Fprintf(e.stderr, "%s every failed job of %s?%s [y/N] ", strings.ToUpper(verb[:1])+verb[1:], *queue,
			map[bool]string{true: " This cannot be undone."}[verb == "delete"])
		answer, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil {
			fmt.Fprintln(e.stderr)
		}
		if s := strings.ToLower(strings.TrimSpace(answer)); s != "y" && s != "yes" {
			return e.fail(name, errors.New("not confirmed; nothing changed"))
		}
	}
	var raw json.RawMessage
	if err := c.call("POST", queuePath(*queue)+"/actions/"+a.api, nil, &raw); err != nil {
		return e.fail(name, err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var ans map[string]int
	if err := json.Unmarshal(raw, &ans); err != nil {
		return e.fail(name, fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	n, ok := ans[a.key]
	if !ok {
		return e.fail(name, fmt.Errorf("the node's answer has no %q: %s", a.key, cell(string(raw), 200)))
	}
	fmt.Fprintf(e.stdout, "%s %d\n", a.done, n)
	return ExitOK
}

// queuePause runs "orderly queues pause|resume Q": POST /api/v1/queues/Q/pause
// or /resume (docs/contract.md §9).
func queuePause(e *env, action string, args []string) int {
	name := "queues " + action
	summary := "Pauses the queue cluster-wide: enqueues are still accepted, no node starts a\nnew handler call of it, and running calls finish; kept in Redis until resume."
	if action == "resume" {
		summary = "Resumes a paused queue: nodes start its handler calls again."
	}
	fs, c := e.flags(name, help{
		Usage: []string{fmt.Sprintf("orderly queues %s Q [flags]", action), fmt.Sprintf("orderly queues %s --queue Q [flags]", action)},
		Text: summary + fmt.Sprintf(` Prints "Q %sd", or the API's answer
(POST /api/v1/queues/Q/%s, {"paused": bool}) with --json.`, action, action),
		Examples: []string{fmt.Sprintf("orderly queues %s orders", action)},
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
	if err := c.call("POST", queuePath(*queue)+"/"+action, nil, &raw); err != nil {
		return e.fail(name, err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "%s %sd\n", *queue, action)
	return ExitOK
}
