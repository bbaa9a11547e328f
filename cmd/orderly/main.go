// Command orderly runs an Orderly node: ordered background jobs on Redis.
//
//	orderly                          # a node on the embedded in-memory store, HTTP on 127.0.0.1:8080
//	orderly --redis redis://127.0.0.1:6379/0 --config orderly.yaml
//	orderly --help                   # every flag, its environment variable and default
//	orderly members                  # the cluster as a running node sees it
//
// Install it with `go install github.com/orderlyhq/orderly/cmd/orderly@latest`,
// or build it from a checkout with `make build` (bin/orderly).
//
// The tests of this package are the end-to-end tests of the binary: they
// build it (internal/testing/nodetest), run real node processes on real
// redis-servers, kill them, and check what a webhook receiver recorded.
package main

import (
	"os"

	"github.com/orderlyhq/orderly/cmd/internal/app"
)

func main() { os.Exit(app.Main()) }
