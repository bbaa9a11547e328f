package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"text/tabwriter"

	"github.com/orderlyhq/orderly/web/apiv1"
)

var statsHelp = help{
	Usage: []string{"orderly stats [--queue Q] [flags]"},
	Text: `Shows every queue's metrics (GET /api/v1/queues), or one queue's with --queue
(GET /api/v1/queues/Q):
LENGTH queued ids (FRESH never failed, RETRIES failed before), MORGUE ids in
the morgue, LAG how long the most overdue job has waited, BUSY ids in flight,
PROCESSED and FAILED ids settled since the queue was created; a paused
queue's name is followed by "(paused)". With --json,
the API's answer, {"queues": [...]}; with --queue too, the one queue's
object in that shape.`,
	Examples: []string{
		"orderly stats",
		"orderly stats --queue orders --json",
	},
}

// stats prints the queues' metrics.
func stats(e *env, args []string) int {
	fs, c := e.flags("stats", statsHelp)
	queue := fs.String("queue", "", "show this queue only")
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	if *queue != "" {
		if code, stop := e.checkQueue(fs, *queue); stop {
			return code
		}
	}
	path := "/api/v1/queues"
	if *queue != "" {
		path += "/" + url.PathEscape(*queue)
	}
	var raw json.RawMessage
	if err := c.call("GET", path, nil, &raw); err != nil {
		return e.fail("stats", err)
	}
	if *queue != "" { // one queue's object: answer in the shape of the listing
		raw = append(append([]byte(`{"queues":[`), raw...), "]}"...)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var ans apiv1.Queues
	if err := json.Unmarshal(raw, &ans); err != nil {
		return e.fail("stats", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	views := ans.Queues
	if len(views) == 0 {
		fmt.Fprintln(e.stdout, "no queues")
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tLENGTH\tFRESH\tRETRIES\tMORGUE\tLAG\tBUSY\tPROCESSED\tFAILED\tSNOOZED\tDISCARDED\tCANCELLED\tEXPIRED")
	for _, v := range views {
		name := cell(v.Name, 64)
		if v.Paused {
			name += " (paused)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", name, v.Length, v.Fresh, v.Retries,
			v.MorgueLength, formatDuration(seconds(v.Lag)), v.Busy, v.Processed, v.Failed, v.Snoozed, v.Discarded, v.Cancelled, v.Expired)
	}
	tw.Flush()
	return ExitOK
}
