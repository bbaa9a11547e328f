//go:build !chaos

package chaos

import (
	"log/slog"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/persistence"
)

// Enabled reports whether this binary has the fault seams.
const Enabled = false

// WrapStore returns s in a regular build.
func WrapStore(s persistence.Store, _ *slog.Logger) persistence.Store { return s }

// Install does nothing in a regular build.
func Install(*orderly.ClusterConfig, *slog.Logger) (stop func(), err error) { return func() {}, nil }
