// Command orderly runs an Orderly node: ordered background jobs on Redis.
//
//	orderly                          # a node on the embedded in-memory store, HTTP on 127.0.0.1:8080
//	orderly --redis redis://127.0.0.1:6379/0 --config orderly.yaml
//	orderly --help                   # every flag, its environment variable and default
//	orderly members                  # the cluster as a running node sees it
//
// Build it with `go build -o orderly ./cmd/node`, or run `go run ./cmd/node`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/orderlyhq/orderly/internal/cli"
	"github.com/orderlyhq/orderly/internal/config"
	"github.com/orderlyhq/orderly/internal/server"
)

func main() {
	if len(os.Args) > 1 && cli.IsCommand(os.Args[1]) {
		os.Exit(cli.Run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
	}
	cfg, err := config.Load(os.Args[1:], os.Environ(), os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "orderly:", err)
		os.Exit(2)
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGTSTP, syscall.SIGCONT)
	if err := server.Run(context.Background(), cfg, os.Stderr, signals); err != nil {
		fmt.Fprintln(os.Stderr, "orderly:", err)
		os.Exit(1)
	}
}
