package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/web/apiv1"
)

var membersHelp = help{
	Usage:    []string{"orderly members [flags]"},
	Text:     "Lists the cluster's members as the node sees them, with the version each runs and the shards each holds; for each queue with shards that no node holds, says why.",
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
	for _, line := range unservedReasons(&v) {
		fmt.Fprintln(e.stdout, line)
	}
	return ExitOK
}

// unservedReasons explains, queue by queue, the shards without an owner
// (no node holds their lease): either no live member of this store has the
// queue configured (the queue is in the store from an earlier
// configuration or another node, or only members that are draining, dead
// or foreign have it), or live members have it and the shards are between
// owners. A paused queue keeps its owners: pausing is not a reason.
func unservedReasons(v *apiv1.Cluster) []string {
	total, free := map[string]int{}, map[string]int{}
	var queues []string
	for _, s := range v.Shards {
		if total[s.Queue] == 0 {
			queues = append(queues, s.Queue)
		}
		total[s.Queue]++
		if s.Owner == "" {
			free[s.Queue]++
		}
	}
	var out []string
	for _, q := range queues {
		if free[q] == 0 {
			continue
		}
		var alive []string
		others := map[string][]string{} // by state: the members not alive that have q
		for _, m := range v.Members {
			if !slices.Contains(m.Queues, q) {
				continue
			}
			if m.State == string(orderly.MemberAlive) {
				alive = append(alive, printable(m.Name))
			} else {
				others[m.State] = append(others[m.State], printable(m.Name))
			}
		}
		var why string
		switch {
		case len(alive) > 0:
			why = fmt.Sprintf("served by %s, between owners: a node joining, leaving or taking over from a dead one (lease_ttl + 2 s at most), or one that cannot reach Redis; look again", strings.Join(alive, ", "))
		case len(others) == 0:
			why = "no member has the queue configured: it is in the store from an earlier configuration or another node; add it to a node's queues to serve it"
		default:
			var has []string
			for _, st := range slices.Sorted(maps.Keys(others)) {
				has = append(has, st+": "+strings.Join(others[st], ", "))
			}
			why = fmt.Sprintf("no live member has the queue configured, only members that serve nothing (%s)", strings.Join(has, "; "))
		}
		out = append(out, fmt.Sprintf("queue %s: %d of %d shards without an owner: %s", printable(q), free[q], total[q], why))
	}
	return out
}

// dash makes s safe for a table cell; empty is "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return printable(s)
}
