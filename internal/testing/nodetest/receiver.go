package nodetest

import (
	"testing"

	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// NewReceiver starts a webhook receiver for a test (webhooktest.Receiver);
// answer picks the answer to each delivery (nil acknowledges everything).
// It is closed when the test ends; history.FromWebhook(r.Calls()) turns
// what it recorded into a history to check.
func NewReceiver(t testing.TB, answer webhooktest.AnswerFunc) *webhooktest.Receiver {
	t.Helper()
	r := webhooktest.NewReceiver(answer)
	t.Cleanup(r.Close)
	return r
}
