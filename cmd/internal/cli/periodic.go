package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/orderlyhq/orderly/web/apiv1"
)

var periodicHelp = help{
	Usage: []string{"orderly periodic [flags]"},
	Text: `Lists the node's periodic jobs (GET /api/v1/periodic): each one's name,
queue, schedule, the id it enqueues, and its last and next tick (UTC; "-"
before the first tick). With --json, the API's answer.`,
	Examples: []string{"orderly periodic", "orderly periodic --json"},
}

// periodicCmd prints the node's periodic jobs.
func periodicCmd(e *env, args []string) int {
	fs, c := e.flags("periodic", periodicHelp)
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	var raw json.RawMessage
	if err := c.call("GET", "/api/v1/periodic", nil, &raw); err != nil {
		return e.fail("periodic", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var ans apiv1.PeriodicJobs
	if err := json.Unmarshal(raw, &ans); err != nil {
		return e.fail("periodic", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	if len(ans.Periodic) == 0 {
		fmt.Fprintln(e.stdout, "no periodic jobs")
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tQUEUE\tSCHEDULE\tID\tLAST TICK\tNEXT TICK")
	tick := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return unixTime(*v)
	}
	for _, p := range ans.Periodic {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cell(p.Name, 40), cell(p.Queue, 40), cell(p.Schedule, 40),
			cell(p.ID, idWidth), tick(p.LastTick), tick(p.NextTick))
	}
	tw.Flush()
	return ExitOK
}
