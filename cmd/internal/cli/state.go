package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// stateHelp is the help of "orderly state" itself.
var stateHelp = help{
	Usage: []string{
		"orderly state get --queue Q ID [flags]",
		"orderly state set --queue Q --version N (--value V | --base64 B | --delete) ID [flags]",
		"orderly state feed --queue Q [--from P] [--limit N] [--wait D] [flags]",
	},
	Text: `Reads or compare-and-sets the state of an id of a stateful queue (state:
true), or reads the queue's change feed. Run "orderly state <command> --help"
for a command's flags.`,
}

var stateCommands = []string{"get", "set", "feed"}

// state dispatches "orderly state get|set".
func state(e *env, args []string) int {
	if len(args) == 0 {
		return e.report("state", &usageError{msg: "missing command: get, set or feed (see orderly state --help)"}, ExitUsage)
	}
	switch args[0] {
	case "get":
		return stateGet(e, args[1:])
	case "set":
		return stateSet(e, args[1:])
	case "feed":
		return stateFeed(e, args[1:])
	case "-h", "-help", "--help", "help":
		usage.Write(e.stdout, stateHelp, nil)
		return ExitOK
	}
	return e.report("state", &usageError{msg: unknownCommand(args[0], stateCommands, "orderly state --help")}, ExitUsage)
}

var stateGetHelp = help{
	Usage: []string{"orderly state get --queue Q ID [flags]"},
	Text: `Prints the id's state and version: "version N" and the state (its JSON, or
base64:... for bytes that are not JSON); "version 0" when it has none.`,
	Examples: []string{"orderly state get --queue orders order-42"},
}

// statePath is the state endpoint of an id.
func statePath(queue, id string) string {
	return "/api/v1/queues/" + url.PathEscape(queue) + "/state/" + url.PathEscape(id)
}

func stateGet(e *env, args []string) int {
	fs, c := e.flags("state get", stateGetHelp)
	queue := fs.String("queue", "", "stateful queue of the id (required)")
	ids, code, stop := e.parseArgs(fs, args)
	if stop {
		return code
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	if len(ids) != 1 {
		return e.usage(fs, "give exactly one id")
	}
	var raw json.RawMessage
	if err := c.call("GET", statePath(*queue, ids[0]), nil, &raw); err != nil {
		return e.fail("state get", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var st apiv1.State
	if err := json.Unmarshal(raw, &st); err != nil {
		return e.fail("state get", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	fmt.Fprintf(e.stdout, "version %d\n", st.Version)
	if st.Deleted {
		fmt.Fprintln(e.stdout, "deleted")
	} else if st.Version != 0 {
		fmt.Fprintln(e.stdout, payloadText(wire.Payload{Data: st.Data}))
	}
	return ExitOK
}

var stateSetHelp = help{
	Usage: []string{"orderly state set --queue Q --version N (--value V | --base64 B | --delete) ID [flags]"},
	Text: `Compare-and-set: writes the id's state only if its current version is N
(0 when it has none), and prints the new version. A stale version exits 1
with the node's 409: read the state again (orderly state get) and retry.
--value gives a JSON value; --base64 gives bytes that are
not JSON; --delete deletes the state. A handler call running for the id
then commits nothing for it, and the id is handed over again with the new
state.`,
	Examples: []string{
		`orderly state set --queue orders --version 3 --value '{"status":"cancelled"}' order-42`,
		"orderly state set --queue orders --version 4 --delete order-42",
	},
}

func stateSet(e *env, args []string) int {
	fs, c := e.flags("state set", stateSetHelp)
	queue := fs.String("queue", "", "stateful queue of the id (required)")
	version := fs.Int64("version", -1, "the current version the write replaces (required; 0: the id has no state)")
	value := fs.String("value", "", "the new state, a JSON value")
	b64 := fs.String("base64", "", "the new state as standard base64")
	del := fs.Bool("delete", false, "delete the state")
	ids, code, stop := e.parseArgs(fs, args)
	if stop {
		return code
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	if len(ids) != 1 {
		return e.usage(fs, "give exactly one id")
	}
	if *version < 0 {
		return e.usage(fs, "--version is required (0 when the id has no state)")
	}
	set := given(fs)
	n := 0
	for _, f := range []string{"value", "base64", "delete"} {
		if set[f] {
			n++
		}
	}
	if n != 1 {
		return e.usage(fs, "give exactly one of --value, --base64 and --delete")
	}
	w := apiv1.StateWrite{Version: version}
	switch {
	case *del:
		w.State = json.RawMessage("null")
	case set["base64"]:
		if _, err := base64.StdEncoding.DecodeString(*b64); err != nil {
			return e.usage(fs, "--base64: %v", err)
		}
		w.StateBase64 = b64
	default:
		if !json.Valid([]byte(*value)) {
			return e.usage(fs, "--value must be a JSON value (quote a string: '\"text\"'), got %s", cell(*value, 60))
		}
		w.State = json.RawMessage(*value)
	}
	body, err := json.Marshal(w)
	if err != nil {
		return e.fail("state set", err)
	}
	var raw json.RawMessage
	if err := c.call("PUT", statePath(*queue, ids[0]), body, &raw); err != nil {
		return e.fail("state set", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var ans apiv1.StateWritten
	if err := json.Unmarshal(raw, &ans); err != nil {
		return e.fail("state set", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	fmt.Fprintf(e.stdout, "version %d\n", ans.Version)
	return ExitOK
}

var stateFeedHelp = help{
	Usage: []string{"orderly state feed --queue Q [--from P] [--limit N] [--wait D] [flags]"},
	Text: `Prints one page of the stateful queue's change feed (GET
/api/v1/queues/Q/feed): a line per committed state change, "POS ID vVERSION
STATE" (the state's JSON, base64:..., sha1:... for a state over 1 KiB, or
deleted), then "next POS": pass it as --from to read on. --from is 0 (the
oldest kept, the default), $ (only changes from now on, with --wait) or a
position. The feed is at least once: an entry may appear twice.`,
	Examples: []string{
		"orderly state feed --queue counters",
		"orderly state feed --queue counters --from 1764150000000-3 --wait 20s",
	},
}

func stateFeed(e *env, args []string) int {
	fs, c := e.flags("state feed", stateFeedHelp)
	queue := fs.String("queue", "", "stateful queue (required)")
	from := fs.String("from", "0", "position to read after: 0 (oldest kept), $ (new only) or an entry's position")
	limit := fs.Int("limit", 100, "most entries to print, 1 to 1000")
	wait := fs.Duration("wait", 0, "how long to wait for a first entry when there is none yet (at most 30s)")
	rest, code, stop := e.parseArgs(fs, args)
	if stop {
		return code
	}
	if code, stop := e.checkQueue(fs, *queue); stop {
		return code
	}
	if len(rest) != 0 {
		return e.usage(fs, "takes no arguments besides its flags")
	}
	if *limit < 1 || *limit > 1000 {
		return e.usage(fs, "--limit must be between 1 and 1000, got %d", *limit)
	}
	if *wait < 0 || *wait > 30*time.Second {
		return e.usage(fs, "--wait must be between 0s and 30s, got %s", *wait)
	}
	q := url.Values{"from": {*from}, "limit": {strconv.Itoa(*limit)}}
	if *wait > 0 {
		q.Set("wait", wait.String())
	}
	var raw json.RawMessage
	if err := c.call("GET", "/api/v1/queues/"+url.PathEscape(*queue)+"/feed?"+q.Encode(), nil, &raw); err != nil {
		return e.fail("state feed", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var feed apiv1.Feed
	if err := json.Unmarshal(raw, &feed); err != nil {
		return e.fail("state feed", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	for _, en := range feed.Entries {
		st := "deleted"
		switch {
		case en.Deleted:
		case en.SHA1 != "":
			st = "sha1:" + en.SHA1
		default:
			st = payloadText(wire.Payload{Data: en.Data})
		}
		fmt.Fprintf(e.stdout, "%s %s v%d %s\n", en.Pos, cell(en.ID, 200), en.Version, cell(st, 200))
	}
	fmt.Fprintf(e.stdout, "next %s\n", feed.Next)
	return ExitOK
}
