// Command node runs an Orderly node: ordered background jobs on Redis. It is
// the same program as cmd/orderly (both call cmd/internal/app), kept so that
// `go run ./cmd/node` works from a checkout; install the binary as orderly:
//
//	go install github.com/orderlyhq/orderly/cmd/orderly@latest
//	make build                       # writes bin/orderly
//
//	orderly                          # a node on the embedded in-memory store, HTTP on 127.0.0.1:8080
//	orderly --redis redis://127.0.0.1:6379/0 --config orderly.yaml
//	orderly --help                   # every flag, its environment variable and default
//	orderly members                  # the cluster as a running node sees it
package main

import (
	"os"

	"github.com/orderlyhq/orderly/cmd/internal/app"
)

func main() { os.Exit(app.Main()) }
