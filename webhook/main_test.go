package webhook

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(benchReceiverEnv) != "" {
		os.Exit(serveBenchReceiver())
	}
	goleak.VerifyTestMain(m)
}
