package pull_test

import (
	"testing"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
