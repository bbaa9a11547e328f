package node

import (
	"testing"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

// TestMain fails the package when a goroutine outlives its tests.
func TestMain(m *testing.M) { redistest.Main(m) }
