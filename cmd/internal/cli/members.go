package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/orderlyhq/orderly/web/apiv1"
)

var membersHelp = help{
	Usage:    []string{"orderly members [flags]"},
	Text:     "Lists the cluster's members as the node sees them, with the version each runs and the shards each holds.",
	Examples: []string{"orderly members --http 10.0.0.5:8080"},
}

// members prints the cluster's members and how many shards each serves.
func members(e *env, args []string) int {
	fs, c := e.flags("members", membersHelp)
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	var raw json.RawMessage
	if err := c.call("GET", "/api/v1/cluster", nil, &raw); err != nil {
		return e.fail("members", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var v apiv1.Cluster
	if err := json.Unmarshal(raw, &v); err != nil {
		return e.fail("members", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	held := map[string]int{}
	free := 0
	for _, s := range v.Shards {
		if s.Owner == "" {
			free++
		}
		held[s.Owner]++
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tHTTP\tACTOR\tQUEUES\tVERSION\tSHARDS")
	for _, m := range v.Members {
		name := printable(m.Name)
		if name == v.Self {
			name += " *"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", name, m.State, dash(m.HTTP), dash(m.Actor), dash(strings.Join(m.Queues, ",")), dash(m.Version), held[m.Name])
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "\n%d shards, %s without an owner (* marks the node that answered)\n", len(v.Shards), strconv.Itoa(free))
	return ExitOK
}

// dash makes s safe for a table cell; empty is "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return printable(s)
}
