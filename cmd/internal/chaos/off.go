//go:build !chaos

package chaos

import (
	"log/slog"

	"github.com/orderlyhq/orderly/cluster"
)

// Enabled reports whether this binary has the fault seams.
const Enabled = false

// Install does nothing in a regular build.
func Install(*cluster.Config, *slog.Logger) (stop func(), err error) { return func() {}, nil }
