package webhooktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/orderlytest"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// handler returns a webhook handler posting to rcv, whose sender is closed
// when the test ends.
func handler(t *testing.T, rcv *webhooktest.Receiver, timeout time.Duration) orderly.HandlerFunc {
	t.Helper()
	s, err := webhook.New(&webhook.Config{URL: rcv.URL, Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s.Handle
}

func batch(delivery string, ids ...string) *orderly.Batch {
	b := &orderly.Batch{Queue: "orders", Shard: 1, Delivery: delivery}
	for i, id := range ids {
		b.Jobs = append(b.Jobs, orderly.Job{ID: id, RetryCount: -1, PerformAt: time.Unix(1_700_000_000, 0),
			Payloads: []orderly.Payload{{Data: []byte(fmt.Sprintf(`{"n": %d}`, i)), Score: float64(i)}, {Data: []byte{0xff}, Score: 9}}})
	}
	return b
}

func TestReceiverRecordsAndAnswers(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(func(c *webhooktest.Call) webhooktest.Answer {
		switch c.Delivery() {
		case "orders/1/1/2":
			return webhooktest.Answer{Failed: map[string]string{"b": "card declined"}}
		case "orders/1/1/3":
			return webhooktest.Answer{Status: http.StatusServiceUnavailable}
		}
		return webhooktest.Answer{}
	})
	defer rcv.Close()
	h := handler(t, rcv, 5*time.Second)
	ctx := context.Background()

	require.NoError(t, h(ctx, batch("orders/1/1/1", "a", "b")))
	var pf *orderly.PartialFailure
	require.ErrorAs(t, h(ctx, batch("orders/1/1/2", "a", "b")), &pf)
	require.ErrorContains(t, h(ctx, batch("orders/1/1/3", "a")), "503")

	calls := rcv.Calls()
	require.Len(t, calls, 3)
	c := calls[0]
	require.Equal(t, "orders/1/1/1", c.Delivery())
	require.Equal(t, wire.Request{Queue: "orders", Shard: 1, Jobs: []wire.Job{
		{ID: "a", RetryCount: -1, PerformAt: 1_700_000_000, Payloads: []wire.Payload{{Data: []byte(`{"n": 0}`), Score: 0}, {Data: []byte{0xff}, Score: 9}}},
		{ID: "b", RetryCount: -1, PerformAt: 1_700_000_000, Payloads: []wire.Payload{{Data: []byte(`{"n": 1}`), Score: 1}, {Data: []byte{0xff}, Score: 9}}},
	}}, c.Request, "every payload's bytes, whether sent as JSON or in base64")
	require.False(t, c.Start.IsZero() || c.End.Before(c.Start))
	require.True(t, c.Acked("a") && c.Acked("b"))
	require.True(t, calls[1].Acked("a"))
	require.False(t, calls[1].Acked("b"), "failed by the answer")
	require.False(t, calls[2].Acked("a"), "a 503 fails the delivery")
	require.Len(t, rcv.JobsOf("a"), 3)
	require.Zero(t, rcv.Active())

	rcv.SetAnswer(func(*webhooktest.Call) webhooktest.Answer {
		return webhooktest.Answer{Failed: map[string]string{"a": ""}}
	})
	require.ErrorAs(t, h(ctx, batch("orders/1/1/4", "a")), &pf)
}

// A held answer is seen at once (Active, Calls with a zero End), and a
// sender that gives up cuts the call, which then acknowledged nothing.
func TestReceiverHoldAndCut(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	rcv := webhooktest.NewUnstartedReceiver(func(*webhooktest.Call) webhooktest.Answer {
		return webhooktest.Answer{Hold: hold}
	})
	require.Empty(t, rcv.URL, "not started")
	rcv.Start()
	defer rcv.Close()
	h := handler(t, rcv, 300*time.Millisecond)

	done := make(chan error, 1)
	go func() { done <- h(context.Background(), batch("orders/1/2/1", "k")) }()
	require.Eventually(t, func() bool { return rcv.Active() == 1 }, 5*time.Second, time.Millisecond)
	calls := rcv.Calls()
	require.Len(t, calls, 1)
	require.True(t, calls[0].End.IsZero(), "being answered")
	require.False(t, calls[0].Acked("k"))
	err := <-done
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.Eventually(t, func() bool { return rcv.Active() == 0 }, 5*time.Second, time.Millisecond)
	c := rcv.Calls()[0]
	require.True(t, c.Cut)
	require.False(t, c.End.IsZero())
	require.False(t, c.Acked("k"))
	close(hold)
}

// A Go receiver decodes a delivery into wire.Request and answers a
// wire.Answer; webhooktest plays that receiver for tests.
func Example() {
	rcv := webhooktest.NewReceiver(func(c *webhooktest.Call) webhooktest.Answer {
		for _, j := range c.Request.Jobs {
			fmt.Printf("%s: %d payloads, first %s\n", j.ID, len(j.Payloads), j.Payloads[0].Data)
		}
		return webhooktest.Answer{Failed: map[string]string{"order-2": "card declined"}}
	})
	defer rcv.Close()
	sender, err := webhook.New(&webhook.Config{URL: rcv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sender.Close()
	err = sender.Handle(context.Background(), &orderly.Batch{Queue: "orders", Delivery: "orders/0/1/1", Jobs: []orderly.Job{
		{ID: "order-1", RetryCount: -1, Payloads: []orderly.Payload{{Data: []byte(`{"sku":"A-1"}`), Score: 1}}},
		{ID: "order-2", RetryCount: -1, Payloads: []orderly.Payload{{Data: []byte(`{"sku":"B-2"}`), Score: 2}}},
	}})
	fmt.Println("handler:", err)
	c := rcv.Calls()[0]
	fmt.Println("acked:", c.Acked("order-1"), c.Acked("order-2"))
	// Output:
	// order-1: 1 payloads, first {"sku":"A-1"}
	// order-2: 1 payloads, first {"sku":"B-2"}
	// handler: 1 of the batch's ids failed: "order-2": card declined
	// acked: true false
}

func TestReceiverRequiresSignature(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(nil)
	defer rcv.Close()
	rcv.RequireSignature([]byte("s3cr3t"), time.Minute)
	ctx := context.Background()

	signed, err := webhook.New(&webhook.Config{URL: rcv.URL, Secret: []byte("s3cr3t")})
	require.NoError(t, err)
	defer signed.Close()
	require.NoError(t, signed.Handle(ctx, batch("orders/1/1/1", "a")))

	unsigned, err := webhook.New(&webhook.Config{URL: rcv.URL})
	require.NoError(t, err)
	defer unsigned.Close()
	require.ErrorContains(t, unsigned.Handle(ctx, batch("orders/1/1/2", "a")), "401")

	calls := rcv.Calls()
	require.Len(t, calls, 2)
	require.NoError(t, calls[0].SignatureErr)
	require.True(t, calls[0].Acked("a"))
	require.ErrorIs(t, calls[1].SignatureErr, wire.ErrNoSignature)
	require.False(t, calls[1].Acked("a"))
}

// A receiver told to require a signature under an empty secret (a secret
// missing from its configuration) refuses every request, as wire.Verify
// does, even one signed under that empty key, which anyone can compute.
func TestReceiverRefusesAnEmptySecret(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(nil)
	defer rcv.Close()
	rcv.RequireSignature([]byte{}, time.Minute)
	forged := httptestPost(t, rcv.URL, wire.Sign(nil, time.Now(), []byte(`{"queue":"q","shard":0,"jobs":[]}`)), `{"queue":"q","shard":0,"jobs":[]}`)
	require.Equal(t, http.StatusUnauthorized, forged)
	calls := rcv.Calls()
	require.Len(t, calls, 1)
	require.ErrorIs(t, calls[0].SignatureErr, wire.ErrEmptySecret)
}

// httptestPost posts body with the signature header sig to the receiver at
// url and returns the status.
func httptestPost(t *testing.T, url, sig, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(wire.SignatureHeader, sig)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// An answer's State and Timers reach the node: the handler hands them to
// the batch's jobs, and the receiver records the request's state and
// version.
func TestReceiverAnswersStateAndTimers(t *testing.T) {
	t.Parallel()
	at := "2026-11-26T10:00:00Z"
	rcv := webhooktest.NewReceiver(func(c *webhooktest.Call) webhooktest.Answer {
		return webhooktest.Answer{
			State:  map[string]json.RawMessage{"a": json.RawMessage(`{"n": 2}`), "b": json.RawMessage(`null`)},
			Timers: map[string]*string{"a": &at, "b": nil},
		}
	})
	defer rcv.Close()
	b := batch("orders/1/1/1", "a", "b")
	b.Jobs[0] = orderlytest.Stateful(b.Jobs[0], []byte(`{"n":1}`), 3)
	b.Jobs[1] = orderlytest.Stateful(b.Jobs[1], []byte(`"x"`), 7)
	require.NoError(t, handler(t, rcv, 5*time.Second)(context.Background(), b))

	data, deleted, changed := stateChange(b.Jobs[0])
	require.True(t, changed)
	require.False(t, deleted)
	require.JSONEq(t, `{"n": 2}`, string(data))
	when, cleared, changed := timerChange(b.Jobs[0])
	require.True(t, changed)
	require.False(t, cleared)
	require.Equal(t, at, when.UTC().Format(time.RFC3339))
	_, deleted, changed = stateChange(b.Jobs[1])
	require.True(t, changed && deleted, "null deletes")
	_, cleared, changed = timerChange(b.Jobs[1])
	require.True(t, changed && cleared, "null clears")

	calls := rcv.Calls()
	require.Len(t, calls, 1)
	require.Equal(t, int64(3), calls[0].Request.Jobs[0].Version)
	require.JSONEq(t, `{"n":1}`, string(calls[0].Request.Jobs[0].State))
	require.True(t, calls[0].Acked("a") && calls[0].Acked("b"))
}

// stateChange returns what the handler did to j's state.
func stateChange(j orderly.Job) (data []byte, deleted, changed bool) {
	o := orderlytest.OutcomeOf(j)
	return o.State, o.StateDeleted, o.StateChanged
}

// timerChange returns what the handler did to j's timer.
func timerChange(j orderly.Job) (at time.Time, clear, changed bool) {
	o := orderlytest.OutcomeOf(j)
	return o.TimerAt, o.TimerCleared, o.TimerChanged
}

// An id whose answer chose an outcome (retry_in, dead, discard) is not
// acknowledged, and Chose names the outcome only when the answer was
// written.
func TestCallChoseAnOutcome(t *testing.T) {
	t.Parallel()
	end := time.Unix(1_700_000_000, 0)
	c := webhooktest.Call{End: end, Answer: webhooktest.Answer{
		Failed:  map[string]string{"f": "no"},
		RetryIn: map[string]wire.Delay{"s": wire.Delay(time.Second)},
		Dead:    map[string]string{"d": "bad"},
		Discard: map[string]string{"x": "stale"},
	}}
	for id, want := range map[string]string{"a": "", "f": "", "s": "retry_in", "d": "dead", "x": "discard"} {
		require.Equal(t, want, c.Chose(id), id)
		require.Equal(t, id == "a", c.Acked(id), id)
	}
	cut := c
	cut.Cut = true
	require.Empty(t, cut.Chose("s"), "a cut call's answer was not written")
	failed := c
	failed.Answer.Status = 500
	require.Empty(t, failed.Chose("d"), "a failed delivery chose nothing")
	require.Empty(t, (&webhooktest.Call{Answer: c.Answer}).Chose("x"), "still being answered")
}
