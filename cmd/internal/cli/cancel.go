package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

var jobsCancelHelp = help{
	Usage: []string{
		"orderly jobs cancel Q ID [--delete] [flags]",
		"orderly jobs cancel --queue Q ID [--delete] [flags]",
	},
	Text: `Cancels the id everywhere (docs/contract.md §3.13, POST
/api/v1/queues/Q/jobs/ID/actions/cancel): its queued payloads go to the
morgue with the error "cancelled" (or are dropped with --delete), and a
handler call in flight for it is cancelled on whichever node runs it within
about a second (a Go handler's context ends, a webhook request is aborted);
the payloads of that call follow the same way unless the call succeeded.
The other ids of that call go back to the queue. Prints what was done, or
the API's answer with --json; exits 1 when the id is neither queued nor in
flight. Give the id after "--" when it starts with '-'.`,
	Examples: []string{
		"orderly jobs cancel orders order-42",
		"orderly jobs cancel --queue orders order-42 --delete",
	},
}

// jobsCancel runs "orderly jobs cancel".
func jobsCancel(e *env, args []string) int {
	const name = "jobs cancel"
	fs, c := e.flags(name, jobsCancelHelp)
	queue := fs.String("queue", "", "queue of the job (or give it as the first argument)")
	del := fs.Bool("delete", false, "drop the payloads instead of moving them to the morgue")
	rest, code, stop := e.parseArgs(fs, args)
	if stop {
		return code
	}
	if *queue == "" && len(rest) == 2 {
		*queue, rest = rest[0], rest[1:]
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	if len(rest) != 1 {
		return e.usage(fs, "give the queue and one id")
	}
	id := rest[0]
	if err := persistence.ValidateID(id, -1); err != nil {
		var fe *persistence.FieldError
		if errors.As(err, &fe) {
			return e.usage(fs, "id %s: %s", cell(id, idWidth), fe.Reason)
		}
		return e.usage(fs, "id: %v", err)
	}
	mode := persistence.CancelKill
	if *del {
		mode = persistence.CancelDelete
	}
	body, _ := json.Marshal(map[string]string{"mode": string(mode)})
	var raw json.RawMessage
	if err := c.call("POST", jobPath(*queue, id)+"/actions/cancel", body, &raw); err != nil {
		return e.fail(name, err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var ans apiv1.Cancelled
	if err := json.Unmarshal(raw, &ans); err != nil {
		return e.fail(name, fmt.Errorf("the node's answer is not the expected JSON: %s", cell(string(raw), 200)))
	}
	what := fmt.Sprintf("%d queued payloads killed", ans.Killed)
	if mode == persistence.CancelDelete {
		what = fmt.Sprintf("%d queued payloads deleted", ans.Deleted)
	}
	if ans.InFlight {
		what += "; the call in flight was told to stop"
	}
	fmt.Fprintf(e.stdout, "cancelled %s: %s\n", cell(id, 200), what)
	return ExitOK
}

var nodeHelp = help{
	Usage: []string{"orderly node quiet|resume [--http ADDR] [flags]"},
	Text: `Makes the node at --http quiet, or resumes it (docs/operations.md), as
SIGTSTP and SIGCONT do: a quiet node finishes its running batches, releases
its shards to the other nodes and serves none until resumed; it keeps
answering its HTTP API. Runs POST /api/v1/node/quiet or /resume, which act
on the node that serves the request; prints "NODE quiet" or "NODE resumed",
or the API's answer with --json. GET /api/v1/cluster's "quiet" tells a
node's state.`,
	Examples: []string{
		"orderly node quiet --http 10.0.0.5:8080",
		"orderly node resume --http 10.0.0.5:8080",
	},
}

// nodeCmd runs "orderly node quiet|resume".
func nodeCmd(e *env, args []string) int {
	if len(args) == 0 {
		return e.report("node", &usageError{msg: "missing command: quiet or resume (see orderly node --help)"}, ExitUsage)
	}
	action := args[0]
	switch action {
	case "quiet", "resume":
	case "-h", "-help", "--help", "help":
		usage.Write(e.stdout, nodeHelp, nil)
		return ExitOK
	default:
		return e.report("node", &usageError{msg: unknownCommand(action, []string{"quiet", "resume"}, "orderly node --help")}, ExitUsage)
	}
	name := "node " + action
	fs, c := e.flags(name, nodeHelp)
	if code, stop := e.parse(fs, args[1:]); stop {
		return code
	}
	var raw json.RawMessage
	if err := c.call("POST", "/api/v1/node/"+action, nil, &raw); err != nil {
		return e.fail(name, err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var ans apiv1.NodeQuiet
	if err := json.Unmarshal(raw, &ans); err != nil {
		return e.fail(name, fmt.Errorf("the node's answer is not the expected JSON: %s", cell(string(raw), 200)))
	}
	state := "resumed"
	if ans.Quiet {
		state = "quiet"
	}
	fmt.Fprintf(e.stdout, "%s %s\n", cell(ans.Node, 200), state)
	return ExitOK
}
