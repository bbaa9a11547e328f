//go:build !chaos

package chaos

import (
	"log/slog"

	"github.com/orderlyhq/orderly"
)

// Enabled reports whether this binary has the fault seams.
const Enabled = false

// Install does nothing in a regular build.
func Install(*orderly.ClusterConfig, *slog.Logger) (stop func(), err error) { return func() {}, nil }
