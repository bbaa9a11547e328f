// Command node is the same program as cmd/orderly (both are thin mains
// around cmd/internal/app), kept so that `go run ./cmd/node` works from a
// checkout and every revision builds from the same path. Install the binary
// as orderly:
//
//	go install github.com/orderlyhq/orderly/cmd/orderly@latest
//	make build                       # writes bin/orderly
//
// The end-to-end tests of the binary live beside cmd/orderly.
package main

import (
	"os"

	"github.com/orderlyhq/orderly/cmd/internal/app"
)

func main() { os.Exit(app.Main()) }
