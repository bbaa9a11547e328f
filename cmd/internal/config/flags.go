package config

import (
	"errors"
	"flag"
	"io"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
)

// flagValue holds a setting's flag as given; Load parses it after the
// environment so that a bad value is reported like the other problems.
type flagValue struct {
	setting setting
	raw     string
}

func (v *flagValue) String() string     { return v.raw }
func (v *flagValue) Set(s string) error { v.raw = s; return nil }

// IsBoolFlag lets a bool setting's flag be given without a value.
func (v *flagValue) IsBoolFlag() bool { return v.setting.typeName() == "" }

// parsedFlags are the flags the user set.
type parsedFlags struct {
	config    string
	configSet bool
	set       []*flagValue
}

// parseFlags parses args, adding a problem for a bad one. It returns
// flag.ErrHelp for -h or --help.
func parseFlags(args []string, p *problems) (parsedFlags, error) {
	fs := flag.NewFlagSet("orderly", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Load reports errors, and writes the usage itself
	fs.Usage = func() {}
	var out parsedFlags
	fs.StringVar(&out.config, "config", "", "")
	values := make(map[string]*flagValue)
	for _, s := range settings() {
		v := &flagValue{setting: s}
		values[flagName(s.key())] = v
		fs.Var(v, flagName(s.key()), s.help())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return out, err
		}
		p.addf("%v (see --help)", usage.FlagError(fs, err))
	} else if fs.NArg() > 0 {
		p.addf("unexpected argument %q: settings are given as flags such as --name n1 (see --help)", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "config" {
			out.configSet = true
		} else {
			out.set = append(out.set, values[f.Name])
		}
	})
	return out, nil
}

// NodeText explains how a node takes its settings, for --help.
const NodeText = `A node's settings come from a YAML config file, from
ORDERLY_* environment variables and from these flags: a flag overrides its
environment variable, which overrides the file, which overrides the default.
An environment variable set to "" counts as unset.

The config file, named by --config or ORDERLY_CONFIG, has a "node" mapping
with the settings below (under their names with '_' for '-', as in
lease_ttl: 3s) and a "queues" list; each queue has a name and optionally
shards, batch_size, prefetch, max_prefetch (the window a busy shard grows to;
default 100 when prefetch is unset, else prefetch), max_retry_count (default 25; -1 or none: no
retries, to the morgue at the first failure), max_concurrency (most
handler calls at once across the cluster; default 0, no limit), weight (the
queue's share of a node's concurrency under the weighted scheduler, its rank
under the strict one; default 1), rate_limit
{per_second, burst} (handler calls started a second across the cluster),
max_payloads_per_call
(default 1000), timeout (default 30s), retry {policy:
lowkiq, linear or exponential, base, max} and handler {type: log, noop or
http, url, timeout, secret (signs each request), headers (static request
headers); payloads: false keeps a log handler from printing payloads}. An
optional "periodic" list holds jobs enqueued on a schedule: {name, queue,
schedule (5-field cron or "@every 10s"), id, payload}. Queues are defined only in the file; without any, the node
serves one queue "default" whose handler logs each job. The queues of a
node have at most 8192 shards in total. Durations are written as 3s or
1m30s; lists are comma-separated.`

// Flags documents the node's flags, each with its default and its
// environment variable.
func Flags() []usage.Flag {
	flags := []usage.Flag{{Name: "config", Type: "string", Help: "path of the YAML config file", Default: "none", Env: envConfig}}
	defaults := defaultNode()
	defaults.Name = "the host name" // Load looks it up when no source sets the name
	for _, s := range settings() {
		def := s.show(&defaults)
		if def == "" {
			def = "empty"
		}
		flags = append(flags, usage.Flag{Name: flagName(s.key()), Type: s.typeName(), Help: s.help(), Default: def, Env: envName(s.key())})
	}
	return append(flags, usage.Flag{Name: "help", Help: "show this help"})
}

// writeUsage writes the text of --help.
func writeUsage(w io.Writer) {
	usage.Write(w, usage.Help{Usage: []string{"orderly [flags]"}, Text: "Runs an Orderly node.\n" + NodeText}, Flags())
}
