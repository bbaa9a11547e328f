package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

var jobsFinishedHelp = help{
	Usage: []string{"orderly jobs finished --queue Q [--order finished_at|id] [--rev] [--limit N] [--cursor C] [--min M] [--max M] [flags]"},
	Text: `Lists a page of the ids the queue finished (GET /api/v1/queues/Q/finished),
kept on a queue with retain_finished (docs/contract.md §3.14): each id with
when it finished, how many calls it took, the error of its last failed
attempt and the result its handler set, by finished_at, earliest first
(--rev: latest first), or by id (--order id; each page reads every
finished id of the queue's shards). --min and --max bound the sort key:
unix seconds for finished_at, ids for id.
When there are more, the last line is "next: <cursor>": pass it to
--cursor, with the same --rev, for the next page. "orderly jobs get" shows
one finished id.`,
	Examples: []string{
		"orderly jobs finished --queue orders --rev --limit 20",
		"orderly jobs finished --queue orders --json",
	},
}

// jobsFinished prints a page of a queue's finished ids.
func jobsFinished(e *env, args []string) int {
	fs, c := e.flags("jobs finished", jobsFinishedHelp)
	queue := fs.String("queue", "", "queue whose finished ids to list (required)")
	order := fs.String("order", "finished_at", "sort by finished_at or id")
	rev := fs.Bool("rev", false, "reverse order: latest (or highest id) first")
	limit := fs.Int("limit", 0, fmt.Sprintf("ids per page, 1 to %d (default %d)", persistence.MaxListLimit, persistence.DefaultListLimit))
	cursor := fs.String("cursor", "", "continue after a previous page (its next: line)")
	minAt := fs.String("min", "", "lowest sort key to list (unix seconds, or an id with --order id)")
	maxAt := fs.String("max", "", "highest sort key to list")
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	if *order != "finished_at" && *order != "id" {
		return e.usage(fs, "--order must be finished_at or id, got %q", *order)
	}
	set := given(fs)
	if set["limit"] && (*limit < 1 || *limit > persistence.MaxListLimit) {
		return e.usage(fs, "--limit must be between 1 and %d, got %d", persistence.MaxListLimit, *limit)
	}
	q := url.Values{}
	q.Set("order", *order)
	if *rev {
		q.Set("rev", "true")
	}
	if set["limit"] {
		q.Set("limit", strconv.Itoa(*limit))
	}
	for name, v := range map[string]string{"cursor": *cursor, "min": *minAt, "max": *maxAt} {
		if v != "" {
			q.Set(name, v)
		}
	}
	var raw json.RawMessage
	if err := c.call("GET", queuePath(*queue)+"/finished?"+q.Encode(), nil, &raw); err != nil {
		return e.fail("jobs finished", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var page apiv1.FinishedPage
	if err := json.Unmarshal(raw, &page); err != nil {
		return e.fail("jobs finished", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	if len(page.Jobs) == 0 && page.Next == "" {
		msg := "no finished ids kept in " + *queue + " (retain_finished keeps them)"
		if *cursor != "" || *minAt != "" || *maxAt != "" {
			msg = "no more finished ids"
		}
		fmt.Fprintln(e.stdout, msg)
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFINISHED\tATTEMPTS\tLAST ERROR\tRESULT")
	for _, f := range page.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", cell(f.ID, idWidth), unixTime(f.FinishedAt), f.Attempts,
			cell(dash(f.Error), errorWidth), cell(resultText(f), payloadsWidth))
	}
	tw.Flush()
	if page.Next != "" {
		fmt.Fprintf(e.stdout, "next: %s\n", printable(page.Next))
	}
	return ExitOK
}

// resultText renders a finished id's result: its JSON, base64:..., or "-".
func resultText(f apiv1.FinishedJob) string {
	switch {
	case f.Result != nil:
		return string(f.Result)
	case f.ResultBase64 != nil:
		return "base64:" + *f.ResultBase64
	}
	return "-"
}

// finishedLines prints an id's finished record, if it has one.
func finishedLines(tw *tabwriter.Writer, f *apiv1.FinishedJob) {
	if f == nil {
		return
	}
	fmt.Fprintf(tw, "finished:\t%s, %d attempts\n", unixTime(f.FinishedAt), f.Attempts)
	if f.Error != "" {
		fmt.Fprintf(tw, "  last error:\t%s\n", cell(f.Error, 200))
	}
	for _, a := range f.Errors {
		fmt.Fprintf(tw, "  failed:\t%s  %s\n", unixTime(a.At), cell(a.Error, 200))
	}
	fmt.Fprintf(tw, "  result:\t%s\n", cell(resultText(*f), 200))
}
