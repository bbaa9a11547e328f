// Package app is the orderly command: it dispatches to a subcommand
// (cmd/internal/cli) or runs a node from flags, environment and file
// (cmd/internal/config, cmd/internal/server). cmd/orderly and cmd/node are
// thin mains around Main, so that `go install .../cmd/orderly` installs a
// binary named orderly and `go run ./cmd/node` keeps working.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/orderlyhq/orderly/cmd/internal/bench"
	"github.com/orderlyhq/orderly/cmd/internal/chaos"
	"github.com/orderlyhq/orderly/cmd/internal/cli"
	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/cmd/internal/server"
)

// Main runs the command with the process's arguments and environment and
// returns its exit code.
func Main() int {
	bench.PullAPI = server.PullAPI // the pull scenarios of orderly bench
	cfg, code, done := parse(os.Args[1:], os.Environ(), os.Getenv, os.Stdout, os.Stderr)
	if done {
		return code
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGTSTP, syscall.SIGCONT)
	if !chaos.Enabled { // the chaos build cuts its gossip on SIGUSR1
		signal.Notify(signals, syscall.SIGUSR1)
	}
	if err := server.Run(context.Background(), cfg, os.Stderr, signals); err != nil {
		fmt.Fprintln(os.Stderr, "orderly:", err)
		return 1
	}
	return 0
}

// parse handles the command line: a subcommand (or a word that looks like
// a mistyped one), --version and --help run to completion (done, with the
// exit code); anything else is the configuration of a node to run.
func parse(args, environ []string, getenv func(string) string, stdout, stderr io.Writer) (cfg *config.Config, code int, done bool) {
	if rest, ok := cutCheck(args); ok {
		return nil, cli.Run(append([]string{"check"}, rest...), getenv, stdout, stderr), true
	}
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "--version" || a == "-version" || a == "-v":
			return nil, cli.Run(append([]string{"version"}, args[1:]...), getenv, stdout, stderr), true
		case a != "" && !strings.HasPrefix(a, "-"):
			// A node takes no arguments, so a word is a command; the CLI
			// names the nearest when it is not one.
			return nil, cli.Run(args, getenv, stdout, stderr), true
		}
	}
	cfg, err := config.Load(args, environ, nil)
	if errors.Is(err, flag.ErrHelp) {
		cli.WriteHelp(stdout)
		return nil, cli.ExitOK, true
	}
	if err != nil {
		fmt.Fprintln(stderr, "orderly:", err)
		return nil, cli.ExitUsage, true
	}
	return cfg, 0, false
}

// cutCheck reports whether the node's flags ask for --check (before any
// "--"), and returns them without it.
func cutCheck(args []string) ([]string, bool) {
	for i, a := range args {
		switch a {
		case "--":
			return args, false
		case "--check", "-check":
			return append(append([]string{}, args[:i]...), args[i+1:]...), true
		}
	}
	return args, false
}
