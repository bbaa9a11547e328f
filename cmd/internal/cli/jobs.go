package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// jobsHelp is the help of "orderly jobs" itself.
var jobsHelp = help{
	Usage: []string{
		"orderly jobs list        --queue Q [--order perform_at|id|retry_count] [--rev] [--limit N] [--cursor C] [flags]",
		"orderly jobs get         --queue Q ID [flags]",
		"orderly jobs finished    --queue Q [--order finished_at|id] [--rev] [--limit N] [--cursor C] [flags]",
		"orderly jobs delete      --queue Q ID [flags]",
		"orderly jobs perform-now --queue Q ID [flags]",
		"orderly jobs kill        --queue Q ID [flags]",
		"orderly jobs cancel      Q ID [--delete] [flags]",
	},
	Text: `Lists the queued jobs of a queue, looks one id up, lists the ids it
finished (kept with retain_finished), or acts on one id's
queued entry: delete it, make it due now (perform-now), or move all its
queued payloads to the morgue (kill); those never touch a call in flight
for the id. cancel stops the id everywhere, a call in flight included
(docs/contract.md §3.13). Run "orderly jobs <command> --help" for a
command's flags.`,
}

// jobsCommands are the commands of orderly jobs.
var jobsCommands = []string{"list", "get", "finished", "delete", "perform-now", "kill", "cancel"}

// jobs dispatches "orderly jobs list|get|finished|delete|perform-now|kill|cancel".
func jobs(e *env, args []string) int {
	if len(args) == 0 {
		return e.report("jobs", &usageError{msg: "missing command: list, get, finished, delete, perform-now, kill or cancel (see orderly jobs --help)"}, ExitUsage)
	}
	switch args[0] {
	case "list":
		return jobsList(e, args[1:])
	case "get":
		return jobsGet(e, args[1:])
	case "finished":
		return jobsFinished(e, args[1:])
	case "delete", "perform-now", "kill":
		return jobsAction(e, args[0], args[1:])
	case "cancel":
		return jobsCancel(e, args[1:])
	case "-h", "-help", "--help", "help":
		usage.Write(e.stdout, jobsHelp, nil)
		return ExitOK
	}
	return e.report("jobs", &usageError{msg: unknownCommand(args[0], jobsCommands, "orderly jobs --help")}, ExitUsage)
}

var jobsListHelp = help{
	Usage: []string{"orderly jobs list --queue Q [--order perform_at|id|retry_count] [--rev] [--limit N] [--cursor C] [--min M] [--max M] [flags]"},
	Text: `Lists a page of the queue's queued jobs (not those in flight: see orderly
processing): each id with when it is due, its retry count (-1: never
failed), its last error and its payloads (long cells are cut; --json shows
them whole). When there are more jobs, the last line is "next: <cursor>":
pass it to --cursor, with the same --order and --rev, for the next page.
--min and --max bound the sort key, inclusive: ids, unix seconds for
perform_at, or retry counts. --order id --min X --max X finds the id X.
Without --order the jobs come by perform_at, earliest first. --error TEXT
keeps the jobs whose last error contains TEXT (any case): the node reads
the listing up to 10,000 jobs per page and says how many it searched;
--order retry_count --min 0 reads only the jobs that failed.`,
	Examples: []string{
		"orderly jobs list --queue orders",
		"orderly jobs list --queue orders --order retry_count --rev --limit 20",
		"orderly jobs list --queue orders --order id --min order-1 --max order-1",
		"orderly jobs list --queue orders --order retry_count --min 0 --error timeout",
	},
}

// jobsList prints a page of a queue's queued jobs.
func jobsList(e *env, args []string) int {
	fs, c := e.flags("jobs list", jobsListHelp)
	queue := fs.String("queue", "", "queue whose jobs to list (required)")
	lf := addListFlags(fs, "perform_at", "sort by perform_at, id or retry_count", "jobs", "lowest sort key to list")
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	q, code, stop := lf.query(e, fs, "id", "perform_at", "retry_count")
	if stop {
		return code
	}
	var raw json.RawMessage
	if err := c.call("GET", queuePath(*queue)+"/jobs?"+q.Encode(), nil, &raw); err != nil {
		return e.fail("jobs list", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var page apiv1.JobPage
	if err := json.Unmarshal(raw, &page); err != nil {
		return e.fail("jobs list", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	if len(page.Jobs) == 0 && page.Next == "" {
		fmt.Fprintln(e.stdout, lf.emptyLine(fmt.Sprintf("no jobs queued in %s", *queue), "no more jobs"))
		return ExitOK
	}
	e.jobTable(page.Jobs)
	if page.Scanned != nil {
		fmt.Fprintf(e.stdout, "searched %d jobs\n", *page.Scanned)
	}
	if page.Next != "" {
		fmt.Fprintf(e.stdout, "next: %s\n", printable(page.Next))
	}
	return ExitOK
}

// jobTable prints jobs as a table.
func (e *env) jobTable(list []apiv1.ListedJob) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPERFORM AT\tRETRIES\tERROR\tPAYLOADS")
	for _, j := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", cell(j.ID, idWidth), unixTime(j.PerformAt), j.RetryCount,
			cell(j.Error, errorWidth), payloadList(j.Payloads, j.PayloadCount))
	}
	tw.Flush()
}

// payloadList renders payloads in one cell: the payload, or the count and
// the first ones ("3: {"sku":1}, "b", …").
func payloadList(ps []wire.Payload, count int) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = payloadText(p)
	}
	s := strings.Join(parts, ", ")
	if n := max(count, len(ps)); n > 1 {
		s = strconv.Itoa(n) + ": " + s
		if n > len(ps) {
			s += ", …"
		}
	}
	return cell(s, payloadsWidth)
}

// headerLines prints the headers of the payloads that have some, one line
// per payload, numbered from 1 as the payload list shows them
// (docs/contract.md §10), and the expiry of those that have one (§3.15).
func headerLines(w io.Writer, ps []wire.Payload) {
	for i, p := range ps {
		if !p.ExpiresAt.IsZero() {
			fmt.Fprintf(w, "  expires #%d:\t%s\n", i+1, p.ExpiresAt.UTC().Format(time.RFC3339Nano))
		}
		if len(p.Headers) == 0 {
			continue
		}
		keys := slices.Sorted(maps.Keys(p.Headers))
		kv := make([]string, len(keys))
		for j, k := range keys {
			kv[j] = k + "=" + p.Headers[k]
		}
		fmt.Fprintf(w, "  headers #%d:\t%s\n", i+1, cell(strings.Join(kv, " "), 200))
	}
}

// queuePath is the endpoint of queue (a valid queue name).
func queuePath(queue string) string {
	return "/api/v1/queues/" + url.PathEscape(queue)
}

// jobPath is the endpoint of one job; the id is escaped whole, '/' too.
func jobPath(queue, id string) string {
	return queuePath(queue) + "/jobs/" + url.PathEscape(id)
}

var jobsGetHelp = help{
	Usage: []string{"orderly jobs get --queue Q ID [flags]"},
	Text: `Looks one id up (GET /api/v1/queues/Q/jobs/ID): its queued entry, and the
call in flight for it, if any, with the node that runs it; on a stateful
queue also its state, version and timer, which outlive its jobs; a deleted
state shows as "deleted" with the version the next "orderly state set"
names; its morgue entry, if it has one (an id only in the morgue is
found); and on a queue with retain_finished its finished record (when it
finished, its attempts, last error and result). Exits 1 when nothing of the
id is known.
Give the id after "--" when it starts with '-'.`,
	Examples: []string{
		"orderly jobs get --queue orders order-42",
		"orderly jobs get --queue orders --json -- -odd-id",
	},
}

// oneID parses the flags and the one id of a command on one job.
func (e *env) oneID(fs *flagSet, args []string, queue *string) (string, int, bool) {
	rest, code, stop := e.parseArgs(fs, args)
	if stop {
		return "", code, true
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return "", code, true
	}
	switch {
	case len(rest) == 0:
		return "", e.usage(fs, "give the job's id"), true
	case len(rest) > 1:
		return "", e.usage(fs, "give one id, got %d", len(rest)), true
	}
	if err := persistence.ValidateID(rest[0], -1); err != nil {
		var fe *persistence.FieldError
		if errors.As(err, &fe) {
			return "", e.usage(fs, "id %s: %s", cell(rest[0], idWidth), fe.Reason), true
		}
		return "", e.usage(fs, "id: %v", err), true
	}
	return rest[0], 0, false
}

// jobsGet prints one id's queued and in-flight entries.
func jobsGet(e *env, args []string) int {
	fs, c := e.flags("jobs get", jobsGetHelp)
	queue := fs.String("queue", "", "queue of the job (required)")
	id, code, stop := e.oneID(fs, args, queue)
	if stop {
		return code
	}
	var raw json.RawMessage
	if err := c.call("GET", jobPath(*queue, id), nil, &raw); err != nil {
		return e.fail("jobs get", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var l apiv1.JobLookup
	if err := json.Unmarshal(raw, &l); err != nil {
		return e.fail("jobs get", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", cell(l.ID, 200))
	fmt.Fprintf(tw, "queue:\t%s (shard %d)\n", cell(l.Queue, 64), l.Shard)
	if j := l.Queued; j != nil {
		fmt.Fprintf(tw, "queued:\tdue %s, retry count %d, %d payloads\n", unixTime(j.PerformAt), j.RetryCount, max(j.PayloadCount, len(j.Payloads)))
		if j.Error != "" {
			fmt.Fprintf(tw, "  error:\t%s\n", cell(j.Error, 200))
		}
		fmt.Fprintf(tw, "  payloads:\t%s\n", payloadList(j.Payloads, j.PayloadCount))
		headerLines(tw, j.Payloads)
	} else {
		fmt.Fprintf(tw, "queued:\tnothing\n")
	}
	if p := l.Processing; p != nil {
		fmt.Fprintf(tw, "in flight:\ton %s since %s (epoch %d, seq %d), %d payloads\n", cell(p.Owner, 64), unixTime(p.FetchedAt),
			p.Epoch, p.Seq, max(p.PayloadCount, len(p.Payloads)))
		fmt.Fprintf(tw, "  payloads:\t%s\n", payloadList(p.Payloads, p.PayloadCount))
		headerLines(tw, p.Payloads)
	} else {
		fmt.Fprintf(tw, "in flight:\tno\n")
	}
	// The state, version and timer of a stateful queue's id, as orderly
	// state get prints them (docs/contract.md §11).
	if st := l.State; st != nil && st.Deleted {
		fmt.Fprintf(tw, "state:\tdeleted\n")
		fmt.Fprintf(tw, "version:\t%d\n", st.Version)
	} else if st != nil {
		fmt.Fprintf(tw, "state:\t%s\n", cell(payloadText(wire.Payload{Data: st.Data}), 200))
		fmt.Fprintf(tw, "version:\t%d\n", st.Version)
	}
	if l.Timer != nil {
		fmt.Fprintf(tw, "timer:\t%s\n", e.relativeTime(*l.Timer))
	}
	morgueLines(tw, l.Morgue)
	finishedLines(tw, l.Finished)
	if l.Queued == nil && l.Processing == nil && l.State != nil {
		if l.State.Deleted {
			fmt.Fprintf(tw, "note:\tthe id's jobs are done or deleted; its state was deleted, its version remains (orderly state set --version %d sets it again)\n", l.State.Version)
		} else {
			fmt.Fprintf(tw, "note:\tthe id's jobs are done or deleted; its state remains (orderly state set --delete removes it)\n")
		}
	}
	tw.Flush()
	return ExitOK
}

// morgueLines prints an id's morgue entry, if it has one.
func morgueLines(tw *tabwriter.Writer, m *apiv1.MorgueEntry) {
	if m == nil {
		return
	}
	since := ""
	if m.FirstAt != nil {
		since = ", first " + unixTime(*m.FirstAt)
	}
	fmt.Fprintf(tw, "morgue:\t%d payloads, last %s%s\n", max(m.PayloadCount, len(m.Payloads)), unixTime(m.UpdatedAt), since)
	fmt.Fprintf(tw, "  error:\t%s\n", cell(m.Error, 200))
	fmt.Fprintf(tw, "  payloads:\t%s\n", payloadList(m.Payloads, m.PayloadCount))
	headerLines(tw, m.Payloads)
}

// jobActions describes the commands on one job's queued entry: the
// request, the answer's key and what they print.
var jobActions = map[string]struct {
	method, suffix, key, done, text string
}{
	"delete": {"DELETE", "", "deleted", "deleted",
		`Deletes the queued entry of the id, all its payloads (DELETE
/api/v1/queues/Q/jobs/ID).`},
	"perform-now": {"POST", "/actions/perform_now", "updated", "due now",
		`Makes the queued entry of the id due now, keeping its retry count and
error (POST /api/v1/queues/Q/jobs/ID/actions/perform_now).`},
	"kill": {"POST", "/actions/kill", "killed", "killed",
		`Moves every queued payload of the id to the morgue, with its last error
("killed" when it never failed) (POST /api/v1/queues/Q/jobs/ID/actions/kill).`},
}

func jobActionHelp(action string) help {
	return help{
		Usage: []string{fmt.Sprintf("orderly jobs %s --queue Q ID [flags]", action)},
		Text: jobActions[action].text + `

A call in flight for the id is not touched: it finishes and settles as
usual. Exits 1 when nothing of the id is queued (the node answers 409 when
a call holds it, 404 otherwise). Prints "<action> <id>", or the API's
answer with --json. Give the id after "--" when it starts with '-'.`,
		Examples: []string{fmt.Sprintf("orderly jobs %s --queue orders order-42", action)},
	}
}

// jobsAction deletes, performs now or kills one id's queued entry.
func jobsAction(e *env, action string, args []string) int {
	name := "jobs " + action
	a := jobActions[action]
	fs, c := e.flags(name, jobActionHelp(action))
	queue := fs.String("queue", "", "queue of the job (required)")
	id, code, stop := e.oneID(fs, args, queue)
	if stop {
		return code
	}
	var raw json.RawMessage
	if err := c.call(a.method, jobPath(*queue, id)+a.suffix, nil, &raw); err != nil {
		return e.fail(name, err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var ans map[string]int
	if err := json.Unmarshal(raw, &ans); err != nil || ans[a.key] != 1 {
		return e.fail(name, fmt.Errorf("the node's answer is not the expected JSON: %s", cell(string(raw), 200)))
	}
	fmt.Fprintf(e.stdout, "%s %s\n", a.done, cell(id, 200))
	return ExitOK
}

var processingHelp = help{
	Usage: []string{"orderly processing --queue Q [flags]", "orderly processing Q [flags]"},
	Text: `Lists the calls in flight of a queue (GET /api/v1/queues/Q/processing): for
each shard with a batch, the node running it, since when, and each id with
its payloads. With --json, the API's answer.`,
	Examples: []string{
		"orderly processing orders",
		"orderly processing --queue orders --json",
	},
}

// processing prints the in-flight batches of a queue.
func processing(e *env, args []string) int {
	fs, c := e.flags("processing", processingHelp)
	queue := fs.String("queue", "", "queue whose calls in flight to list (required; or give it as the argument)")
	rest, code, stop := e.parseArgs(fs, args)
	if stop {
		return code
	}
	switch {
	case len(rest) > 1:
		return e.usage(fs, "unexpected argument %q", rest[1])
	case len(rest) == 1 && *queue != "" && rest[0] != *queue:
		return e.usage(fs, "give the queue once: --queue %s or %s", *queue, rest[0])
	case len(rest) == 1:
		*queue = rest[0]
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	var raw json.RawMessage
	if err := c.call("GET", queuePath(*queue)+"/processing", nil, &raw); err != nil {
		return e.fail("processing", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var ans apiv1.Processing
	if err := json.Unmarshal(raw, &ans); err != nil {
		return e.fail("processing", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	if len(ans.Batches) == 0 {
		fmt.Fprintf(e.stdout, "nothing in flight in %s\n", *queue)
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tNODE\tSINCE\tID\tRETRIES\tPAYLOADS")
	for _, b := range ans.Batches {
		for _, j := range b.Jobs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", b.Shard, cell(b.Owner, 40), unixTime(b.FetchedAt),
				cell(j.ID, idWidth), j.RetryCount, payloadList(j.Payloads, j.PayloadCount))
		}
	}
	tw.Flush()
	return ExitOK
}
