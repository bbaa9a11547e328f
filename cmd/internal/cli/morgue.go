package cli

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// morgueHelp is the help of "orderly morgue" itself.
var morgueHelp = help{
	Usage: []string{
		"orderly morgue list    --queue Q [--order id|updated_at] [--rev] [--limit N] [--cursor C] [flags]",
		"orderly morgue requeue --queue Q (--all [--yes] | ID...) [flags]",
		"orderly morgue delete  --queue Q (--all [--yes] | ID...) [flags]",
	},
	Text: `Lists, requeues or deletes the payloads whose retries ran out. Run
"orderly morgue <command> --help" for a command's flags.`,
}

// morgueCommands are the commands of orderly morgue.
var morgueCommands = []string{"list", "requeue", "delete"}

// Cell widths of the morgue table, in characters.
const (
	idWidth       = 40
	errorWidth    = 40
	payloadsWidth = 60
)

// morgue dispatches "orderly morgue list|requeue|delete".
func morgue(e *env, args []string) int {
	if len(args) == 0 {
		return e.report("morgue", &usageError{msg: "missing command: list, requeue or delete (see orderly morgue --help)"}, ExitUsage)
	}
	switch args[0] {
	case "list":
		return morgueList(e, args[1:])
	case "requeue":
		return morgueAction(e, "requeue", args[1:])
	case "delete":
		return morgueAction(e, "delete", args[1:])
	case "-h", "-help", "--help", "help":
		usage.Write(e.stdout, morgueHelp, nil)
		return ExitOK
	}
	return e.report("morgue", &usageError{msg: unknownCommand(args[0], morgueCommands, "orderly morgue --help")}, ExitUsage)
}

var morgueListHelp = help{
	Usage: []string{"orderly morgue list --queue Q [--order id|updated_at] [--rev] [--limit N] [--cursor C] [--min M] [--max M] [flags]"},
	Text: `Lists a page of the queue's morgue: each id with when it last went there,
its last error and its payloads (long cells are cut; --json shows them
whole, each payload as "payload" when it is JSON, else "payload_base64").
When there are more entries, the last line is "next: <cursor>": pass it to
--cursor, with the same --order and --rev, for the next page. --min and
--max bound the sort key, inclusive: ids, or unix seconds for updated_at.
--error TEXT keeps the entries whose last error contains TEXT (any case):
the node reads up to 10,000 entries per page and says how many it searched.`,
	Examples: []string{
		"orderly morgue list --queue orders",
		"orderly morgue list --queue orders --order updated_at --rev --limit 20",
	},
}

// payloadText renders a payload for a table: its JSON, or base64:... for
// bytes that the API shows as base64.
func payloadText(p wire.Payload) string {
	if wire.IsCompactJSON(p.Data) {
		return string(p.Data)
	}
	return "base64:" + base64.StdEncoding.EncodeToString(p.Data)
}

// morgueList prints a page of a queue's morgue.
func morgueList(e *env, args []string) int {
	fs, c := e.flags("morgue list", morgueListHelp)
	queue := fs.String("queue", "", "queue whose morgue to list (required)")
	lf := addListFlags(fs, "id", "sort by id or updated_at", "entries", "lowest sort key to list (an id, or unix seconds for updated_at)")
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	q, code, stop := lf.query(e, fs, "id", "updated_at")
	if stop {
		return code
	}
	var raw json.RawMessage
	if err := c.call("GET", morguePath(*queue)+"?"+q.Encode(), nil, &raw); err != nil {
		return e.fail("morgue list", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var page apiv1.MorguePage
	if err := json.Unmarshal(raw, &page); err != nil {
		return e.fail("morgue list", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	if len(page.Entries) == 0 && page.Next == "" {
		fmt.Fprintln(e.stdout, lf.emptyLine(fmt.Sprintf("the morgue of %s is empty", *queue), "no more entries"))
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tERROR\tPAYLOADS")
	for _, m := range page.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cell(m.ID, idWidth), unixTime(m.UpdatedAt), cell(m.Error, errorWidth), payloadsCell(m))
	}
	tw.Flush()
	if page.Scanned != nil {
		fmt.Fprintf(e.stdout, "searched %d entries\n", *page.Scanned)
	}
	if page.Next != "" {
		fmt.Fprintf(e.stdout, "next: %s\n", printable(page.Next))
	}
	return ExitOK
}

// payloadsCell renders an entry's payloads in one cell: the payload, or
// the count and the first ones ("3: {"sku":1}, "b", …").
func payloadsCell(m apiv1.MorgueEntry) string {
	parts := make([]string, len(m.Payloads))
	for i, p := range m.Payloads {
		parts[i] = payloadText(p)
	}
	s := strings.Join(parts, ", ")
	if n := max(m.PayloadCount, len(m.Payloads)); n > 1 {
		s = strconv.Itoa(n) + ": " + s
		if n > len(m.Payloads) {
			s += ", …"
		}
	}
	return cell(s, payloadsWidth)
}

// morguePath is the morgue endpoint of queue (a valid queue name).
func morguePath(queue string) string {
	return "/api/v1/queues/" + url.PathEscape(queue) + "/morgue"
}

// morgueActionHelp is the help of requeue or delete.
func morgueActionHelp(action string) help {
	what := map[string]string{
		"requeue": `Puts morgue entries back in the queue, due now and with a full retry
budget; they merge with queued jobs of the same id. Ids not in the morgue
are skipped.`,
		"delete": `Deletes morgue entries for good. Ids not in the morgue are skipped.`,
	}[action]
	return help{
		Usage: []string{fmt.Sprintf("orderly morgue %s --queue Q (--all [--yes] | ID...) [flags]", action)},
		Text: what + `

Name the ids as arguments (after "--" when one starts with '-'), or give
--all for the whole morgue; --all asks for confirmation when stdin is a
terminal, and needs --yes when it is not. Prints "` + pastTense(action) + ` N", or the API's
answer with --json.`,
		Examples: []string{
			fmt.Sprintf("orderly morgue %s --queue orders order-1 order-7", action),
			fmt.Sprintf("orderly morgue %s --queue orders --all --yes", action),
		},
	}
}

func pastTense(action string) string { return action + "d" }

// morgueAction requeues or deletes morgue entries: the ids given, or all.
func morgueAction(e *env, action string, args []string) int {
	name := "morgue " + action
	fs, c := e.flags(name, morgueActionHelp(action))
	queue := fs.String("queue", "", "queue whose morgue to change (required)")
	all := fs.Bool("all", false, "the whole morgue instead of given ids")
	yes := fs.Bool("yes", false, "do not ask for confirmation of --all")
	ids, code, stop := e.parseArgs(fs, args)
	if stop {
		return code
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	var body []byte
	switch {
	case *all && len(ids) > 0:
		return e.usage(fs, "give ids or --all, not both")
	case *all:
		if !*yes {
			if code, stop := e.confirm(fs, c, action, *queue); stop {
				return code
			}
		}
		body, _ = json.Marshal(apiv1.Selection{All: true})
	case len(ids) == 0:
		return e.usage(fs, "give the ids to %s, or --all", action)
	default:
		for i, id := range ids {
			if err := persistence.ValidateID(id, -1); err != nil {
				var fe *persistence.FieldError
				if errors.As(err, &fe) {
					return e.usage(fs, "id %d (%s): %s", i+1, cell(id, idWidth), fe.Reason)
				}
				return e.usage(fs, "id %d: %v", i+1, err)
			}
		}
		body, _ = json.Marshal(apiv1.Selection{IDs: ids}) // strings always marshal
	}
	var raw json.RawMessage
	if err := c.call("POST", morguePath(*queue)+"/"+action, body, &raw); err != nil {
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
	n, ok := ans[pastTense(action)]
	if !ok {
		return e.fail(name, fmt.Errorf("the node's answer has no %q: %s", pastTense(action), cell(string(raw), 200)))
	}
	fmt.Fprintf(e.stdout, "%s %d\n", pastTense(action), n)
	if missing := len(ids) - n; missing == 1 {
		fmt.Fprintf(e.stdout, "1 of the %d ids was not in the morgue\n", len(ids))
	} else if missing > 1 {
		fmt.Fprintf(e.stdout, "%d of the %d ids were not in the morgue\n", missing, len(ids))
	}
	return ExitOK
}

// confirm asks the person at the terminal to confirm an action on the
// whole morgue. Without a terminal it refuses: scripts say --yes.
func (e *env) confirm(fs *flagSet, c *conn, action, queue string) (int, bool) {
	if !e.stdinTTY {
		return e.usage(fs, "--all %ss the whole morgue; confirm with --yes (stdin is not a terminal to ask)", action), true
	}
	what := "every entry"
	var q apiv1.Queue
	if c.call("GET", "/api/v1/queues/"+url.PathEscape(queue), nil, &q) == nil { // the count is a courtesy
		what = fmt.Sprintf("all %d entries", q.MorgueLength)
		if q.MorgueLength == 1 {
			what = "the 1 entry"
		}
	}
	warning := ""
	if action == "delete" {
		warning = " This cannot be undone."
	}
	fmt.Fprintf(e.stderr, "%s %s of the morgue of %s?%s [y/N] ", strings.ToUpper(action[:1])+action[1:], what, queue, warning)
	answer, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil { // end of input: end the prompt's line
		fmt.Fprintln(e.stderr)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return 0, false
	}
	return e.fail(fs.Name(), errors.New("not confirmed; nothing changed")), true
}
