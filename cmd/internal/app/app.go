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
	"os"
	"os/signal"
	"syscall"

	"github.com/orderlyhq/orderly/cmd/internal/cli"
	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/cmd/internal/server"
)

// Main runs the command with the process's arguments and environment and
// returns its exit code.
func Main() int {
	if len(os.Args) > 1 && cli.IsCommand(os.Args[1]) {
		return cli.Run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	}
	cfg, err := config.Load(os.Args[1:], os.Environ(), os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "orderly:", err)
		return 2
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGTSTP, syscall.SIGCONT)
	if err := server.Run(context.Background(), cfg, os.Stderr, signals); err != nil {
		fmt.Fprintln(os.Stderr, "orderly:", err)
		return 1
	}
	return 0
}
