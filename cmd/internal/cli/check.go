package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/orderlyhq/orderly/cmd/internal/config"
)

// checkCmd validates a node's configuration, from the same flags,
// environment and file as the node, without starting anything: exit 0 with
// a summary when it is valid, 1 with every problem otherwise. It opens no
// connection (the Redis URL is checked, not dialled).
//
// With --print-config it prints the whole effective configuration instead
// of the summary, as a configuration file (YAML) that a node reads back
// into the same configuration, every secret replaced by REDACTED.
func checkCmd(e *env, args []string) int {
	args = withoutJSONFlag(args)
	args, printConfig := cutFlag(args, "print-config")
	var help strings.Builder
	cfg, err := config.Load(args, e.environ, &help)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(e.stdout, "Usage: orderly check [--print-config] [node flags]\n       orderly --check [node flags]\n\n"+
			"Validates the configuration a node would run with (its --config file, ORDERLY_* environment\n"+
			"and flags) without starting it: exit 0 and a summary when it is valid, 1 and every\n"+
			"problem otherwise. --print-config prints the whole effective configuration instead of the\n"+
			"summary, as a configuration file (YAML) to use with --config, secrets replaced by REDACTED.\n"+
			"The node's flags are those of orderly --help.\n")
		return ExitOK
	}
	if err != nil {
		return e.report("check", err, ExitError)
	}
	if printConfig {
		b, err := cfg.FileYAML()
		if err != nil {
			return e.report("check", err, ExitError)
		}
		_, _ = e.stdout.Write(b)
		return ExitOK
	}
	if e.jsonErrors {
		return ExitOK
	}
	fmt.Fprintln(e.stdout, checkSummary(cfg))
	return ExitOK
}

// checkSummary describes a valid configuration in a few lines, secrets
// redacted.
func checkSummary(cfg *config.Config) string {
	r := cfg.Redacted()
	var b strings.Builder
	source := "flags and environment"
	if r.File != "" {
		source = r.File
	}
	fmt.Fprintf(&b, "configuration OK (%s)\n", source)
	store := "embedded in-memory store (not durable; for trying Orderly)"
	if r.Node.Redis != "" {
		store = r.Node.Redis
	}
	fmt.Fprintf(&b, "  node %s, http %s, store %s\n", r.Node.Name, r.Node.HTTP, store)
	for _, q := range r.Queues {
		h := q.Handler.Type
		if q.Handler.URL != "" {
			h += " " + q.Handler.URL
		}
		if q.Handler.Secret != "" {
			h += ", signed"
		}
		fmt.Fprintf(&b, "  queue %s: %d shards, batch_size %d, handler %s\n", q.Name, q.Shards, q.BatchSize, h)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	return strings.TrimRight(b.String(), "\n")
}

// cutFlag removes the boolean flag --name (or -name) from args, before any
// "--", and reports whether it was there.
func cutFlag(args []string, name string) ([]string, bool) {
	out := make([]string, 0, len(args))
	found := false
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...), found
		}
		if a == "--"+name || a == "-"+name {
			found = true
			continue
		}
		out = append(out, a)
	}
	return out, found
}

// withoutJSONFlag drops --json, which the node's flags do not take.
func withoutJSONFlag(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		switch a {
		case "--json", "-json", "--json=true", "-json=true", "--json=1", "-json=1":
			continue
		}
		out = append(out, a)
	}
	return out
}
