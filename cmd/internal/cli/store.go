package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
)

// storeHelp is the help of "orderly store" itself.
var storeHelp = help{
	Usage: []string{
		"orderly store layout    --redis URL [--prefix P] [--json]",
		"orderly store downgrade --redis URL [--prefix P] [--yes] [--json]",
	},
	Text: `Reads or changes the storage layout of an Orderly store in Redis; these
commands talk to Redis, not to a node. "layout" prints the layout version
the store is in; "downgrade" rolls a store back to layout 1 so that the
previous release can serve it (docs/storage.md section 8). Run
"orderly store <command> --help" for a command's flags.`,
}

// storeCommands are the commands of orderly store.
var storeCommands = []string{"layout", "downgrade"}

// storeCmd dispatches "orderly store layout|downgrade".
func storeCmd(e *env, args []string) int {
	if len(args) == 0 {
		return e.report("store", &usageError{msg: "missing command: layout or downgrade (see orderly store --help)"}, ExitUsage)
	}
	switch args[0] {
	case "layout":
		return storeLayout(e, args[1:])
	case "downgrade":
		return storeDowngrade(e, args[1:])
	case "-h", "-help", "--help", "help":
		usage.Write(e.stdout, storeHelp, nil)
		return ExitOK
	}
	return e.report("store", &usageError{msg: unknownCommand(args[0], storeCommands, "orderly store --help")}, ExitUsage)
}

// storeFlags holds the flags of the store commands: which store.
type storeFlags struct {
	redis, prefix string
	json          bool
}

// newStoreFlags returns the flag set of "orderly store <name>" with the
// flags every store command takes.
func (e *env) newStoreFlags(name string, h help) (*flagSet, *storeFlags) {
	fs := e.newFlags("store "+name, h)
	sf := &storeFlags{}
	fs.StringVar(&sf.redis, "redis", e.getenv("ORDERLY_REDIS"), "Redis `URL` of the store (redis://, rediss://, unix://, redis+cluster://, redis+sentinel://)")
	fs.env["redis"] = "ORDERLY_REDIS"
	def := redisstore.DefaultPrefix
	if v := e.getenv("ORDERLY_REDIS_PREFIX"); v != "" {
		def = v
	}
	fs.StringVar(&sf.prefix, "prefix", def, "prefix of the store's keys (the nodes' redis_prefix)")
	fs.env["prefix"] = "ORDERLY_REDIS_PREFIX"
	fs.BoolVar(&sf.json, "json", false, "print JSON instead of text (errors too, on stderr)")
	return fs, sf
}

// openedStore is a store opened by a store command, with what it holds.
type openedStore struct {
	store  *redisstore.Store
	close  func() error
	url    string // redacted
	queues []persistence.QueueSpec
	shards int
}

// openStore checks the flags and opens the store; it returns an exit code
// when the command must stop. A prefix under which no queue is registered
// is an error: it is most likely mistyped, and nothing would be done.
func (e *env) openStore(fs *flagSet, sf *storeFlags) (*openedStore, int, bool) {
	if sf.redis == "" {
		return nil, e.usage(fs, "--redis is required (or ORDERLY_REDIS)"), true
	}
	u, err := redisurl.Parse(sf.redis)
	if err != nil {
		return nil, e.usage(fs, "--redis: %v", err), true
	}
	rdb := u.NewClient()
	s, err := redisstore.New(rdb, &redisstore.Config{Prefix: sf.prefix})
	if err != nil {
		rdb.Close()
		return nil, e.usage(fs, "--prefix: %v", err), true
	}
	o := &openedStore{store: s, close: rdb.Close, url: u.Redacted()}
	o.queues, err = s.Queues(e.ctx)
	if err != nil {
		rdb.Close()
		return nil, e.fail(fs.Name(), fmt.Errorf("%s: %w", o.url, err)), true
	}
	if len(o.queues) == 0 {
		rdb.Close()
		return nil, e.fail(fs.Name(), fmt.Errorf("no Orderly store at %s under prefix %q: no queue is registered (is --prefix the nodes' redis_prefix?)", o.url, sf.prefix)), true
	}
	for _, q := range o.queues {
		o.shards += q.Shards
	}
	return o, 0, false
}

// layoutJSON is the output of orderly store layout --json.
type layoutJSON struct {
	// Layout is "2", or "1" for a store that may still hold layout 1
	// data (written by the previous release, or not fully upgraded).
	Layout string `json:"layout"`
	Queues int    `json:"queues"`
	Shards int    `json:"shards"`
}

var storeLayoutHelp = help{
	Usage: []string{"orderly store layout --redis URL [--prefix P] [--json]"},
	Text: `Prints the storage layout version recorded in the store: 2 when every shard
of every queue is in layout 2, 1 when the store may still hold layout 1
data (written by the previous release, or an upgrade not finished: nodes
of this release move a shard's data when they first serve it). When the
upgrade just finished, it records version 2.`,
	Examples: []string{
		"orderly store layout --redis redis://10.0.0.5:6379/0",
		"orderly store layout --redis redis://10.0.0.5:6379/0 --prefix orderly-staging --json",
	},
}

// storeLayout prints the store's layout version.
func storeLayout(e *env, args []string) int {
	fs, sf := e.newStoreFlags("layout", storeLayoutHelp)
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	o, code, stop := e.openStore(fs, sf)
	if stop {
		return code
	}
	defer o.close()
	v, err := o.store.Layout(e.ctx)
	if err != nil {
		return e.fail(fs.Name(), fmt.Errorf("%s: %w", o.url, err))
	}
	out := layoutJSON{Layout: v, Queues: len(o.queues), Shards: o.shards}
	if v == "" {
		out.Layout = "1"
	}
	if sf.json {
		b, _ := json.Marshal(out) // strings and numbers
		e.printJSON(b)
		return ExitOK
	}
	note := ""
	if v == "" {
		note = " (layout 1 data may remain: written by the previous release, or the upgrade is not finished)"
	}
	fmt.Fprintf(e.stdout, "layout %s%s\n%d queues, %d shards, prefix %q at %s\n", out.Layout, note, out.Queues, out.Shards, sf.prefix, o.url)
	return ExitOK
}

// downgradeJSON is the output of orderly store downgrade --json.
type downgradeJSON struct {
	// Layout is the store's layout afterwards: "1".
	Layout string `json:"layout"`
	Queues int    `json:"queues"`
	Shards int    `json:"shards"`
}

var storeDowngradeHelp = help{
	Usage: []string{"orderly store downgrade --redis URL [--prefix P] [--yes] [--json]"},
	Text: `Rolls the store back to storage layout 1, so that the previous release can
serve it: every shard's in-flight jobs are put back in the queue, its queued
jobs (payloads, scores, perform_at, retry counts, errors), morgue entries
and counters are written into layout 1's keys, and layout 2's keys and the
layout version are deleted. Stop every node of this release first: the
command refuses while one still holds a shard's lease (a stopped node's
leases expire after lease_ttl). It is resumable: after a failure, run it
again. It prints what it will do, then asks for confirmation when stdin is
a terminal, and needs --yes when it is not.`,
	Examples: []string{
		"orderly store downgrade --redis redis://10.0.0.5:6379/0",
		"orderly store downgrade --redis redis://10.0.0.5:6379/0 --prefix orderly-staging --yes",
	},
}

// storeDowngrade rolls the store back to layout 1.
func storeDowngrade(e *env, args []string) int {
	fs, sf := e.newStoreFlags("downgrade", storeDowngradeHelp)
	yes := fs.Bool("yes", false, "do it without asking")
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	o, code, stop := e.openStore(fs, sf)
	if stop {
		return code
	}
	defer o.close()
	plan := fmt.Sprintf("Roll the store under prefix %q at %s (%d queues, %d shards) back to storage layout 1; afterwards only the previous release can serve it.", sf.prefix, o.url, len(o.queues), o.shards)
	if !*yes {
		if !e.stdinTTY {
			return e.usage(fs, "this would: %s Confirm with --yes (stdin is not a terminal to ask)", plan)
		}
		fmt.Fprintf(e.stderr, "%s Every node of this release must be stopped. Continue? [y/N] ", plan)
		answer, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil {
			fmt.Fprintln(e.stderr)
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
		default:
			return e.fail(fs.Name(), errors.New("not confirmed; nothing changed"))
		}
	}
	if err := o.store.Downgrade(e.ctx); err != nil {
		if errors.Is(err, redisstore.ErrServed) {
			return e.fail(fs.Name(), fmt.Errorf("%w; stop every node of this release (their leases expire after lease_ttl) and run this again: it resumes where it stopped", err))
		}
		return e.fail(fs.Name(), fmt.Errorf("%w; run this again to resume", err))
	}
	if sf.json {
		b, _ := json.Marshal(downgradeJSON{Layout: "1", Queues: len(o.queues), Shards: o.shards}) // strings and numbers
		e.printJSON(b)
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "downgraded %d queues (%d shards) to layout 1; the previous release can serve the store now\n", len(o.queues), o.shards)
	return ExitOK
}
