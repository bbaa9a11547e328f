package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/orderlytest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// A stateful queue's jobs carry their state and version; the answer's
// "state" sets (a JSON value) or deletes (null) the state of ids of the
// batch, and only ids that did not fail keep their change (the node
// commits changes of succeeded ids only).
func TestStatefulDelivery(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"failed": {"c": "nope"}, "state": {"a": {"n": 2}, "b": null, "c": 1, "zz": 3}, "timers": {"a": "2026-01-01T00:00:00Z", "b": null}}`)
	})
	logger, _ := logBuffer()
	s := newTestSender(t, &Config{URL: rcv.srv.URL + "/hook", Logger: logger})
	b := testBatch("a", "b", "c", "d", "e")
	b.Jobs[4] = orderlytest.Stateful(b.Jobs[4], nil, 6) // deleted at version 6
	b.Jobs[0] = orderlytest.Stateful(b.Jobs[0], []byte(`{"n":1}`), 4)
	b.Jobs[1] = orderlytest.Stateful(b.Jobs[1], []byte{0, 0xff}, 2)
	b.Jobs[2] = orderlytest.Timer(b.Jobs[2], nil, 0)

	err := s.Handle(context.Background(), b)
	pf, ok := orderly.AsPartialFailure(err)
	require.True(t, ok, "%v", err)
	require.Contains(t, pf.Failed, "c")

	var req struct {
		Jobs []map[string]json.RawMessage `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(rcv.last(t).Body, &req))
	require.JSONEq(t, `{"n":1}`, string(req.Jobs[0]["state"]))
	require.Equal(t, "4", string(req.Jobs[0]["version"]))
	require.Equal(t, `"AP8="`, string(req.Jobs[1]["state_base64"]))
	require.Equal(t, "null", string(req.Jobs[2]["state"]))
	require.Equal(t, "0", string(req.Jobs[2]["version"]))
	require.Equal(t, "true", string(req.Jobs[2]["timer"]))
	require.NotContains(t, req.Jobs[0], "timer")
	require.NotContains(t, req.Jobs[2], "deleted")
	require.Equal(t, "null", string(req.Jobs[4]["state"]))
	require.Equal(t, "6", string(req.Jobs[4]["version"]), "a deleted state keeps its version")
	require.Equal(t, "true", string(req.Jobs[4]["deleted"]))
	var back wire.Job
	require.NoError(t, json.Unmarshal(mustMarshal(t, req.Jobs[4]), &back))
	require.Nil(t, back.State)
	require.Equal(t, int64(6), back.Version)
	require.NotContains(t, req.Jobs[3], "state", "not a stateful job")
	require.NotContains(t, req.Jobs[3], "version")

	data, del, changed := stateChange(b.Jobs[0])
	require.True(t, changed)
	require.False(t, del)
	require.Equal(t, `{"n":2}`, string(data))
	_, del, changed = stateChange(b.Jobs[1])
	require.True(t, changed)
	require.True(t, del)
	at, clear, tchanged := timerChange(b.Jobs[0])
	require.True(t, tchanged)
	require.False(t, clear)
	require.True(t, at.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	_, clear, tchanged = timerChange(b.Jobs[1])
	require.True(t, tchanged)
	require.True(t, clear)
	_, _, changed = stateChange(b.Jobs[3])
	require.False(t, changed)
}

func TestAnswerTimersAndEmits(t *testing.T) {
	t.Parallel()
	a, err := decodeAnswer([]byte(`{"emit": []}`))
	require.NoError(t, err)
	require.Empty(t, a.Emit)
	for _, bad := range []string{
		`{"emit": {}}`,
		`{"emit": [{"queue": "q", "id": "x"}]}`,
		`{"emit": [{"from": "a", "queue": "q", "id": "x", "frm": 1}]}`,
		`{"emit": [{"from": "a", "queue": "q", "id": "x", "perform_in": -1}]}`,
		`{"emit": [{"from": "a", "queue": "q", "id": "x", "perform_in": "-1s"}]}`,
		`{"emit": [{"from": "a", "queue": "q", "id": "x", "perform_in": "soon"}]}`,
		`{"emit": [{"from": "a", "queue": "q", "id": "x", "perform_in": true}]}`,
		`{"emit": [{"from": "a", "queue": "q", "id": "x", "expires_in": -1}]}`,
		`{"emit": [{"from": "a", "queue": "q", "id": "x", "expires_in": "soon"}]}`,
		`{"emit": [{"from": "a", "queue": "q", "id": "x", "payload": 1, "payload_base64": "AA=="}]}`,
		`{"emit": [{"from": "a", "queue": "q", "id": "x", "payload_base64": "!"}]}`,
		`{"emit": [{"from": 1, "queue": "q", "id": "x"}]}`,
	} {
		_, err = decodeAnswer([]byte(bad))
		require.ErrorIs(t, err, errBadAnswer, bad)
	}
	_, err = decodeAnswer([]byte(`{"timers": {"a": "tomorrow"}}`))
	require.ErrorIs(t, err, errBadAnswer)
	a, err = decodeAnswer([]byte(`{"timers": {"a": null, "b": "2026-01-01T00:00:00.5Z"}}`))
	require.NoError(t, err)
	require.Nil(t, a.Timers["a"])
	require.Equal(t, "2026-01-01T00:00:00.5Z", *a.Timers["b"])
	a, err = decodeAnswer([]byte(`{"state": {"a": [1, 2]}}`))
	require.NoError(t, err)
	require.Equal(t, `[1,2]`, string(a.State["a"]))
}

// A receiver written in Go decodes the state of a stateful queue's jobs.
func TestRequestDecodesState(t *testing.T) {
	t.Parallel()
	b := testBatch("a", "b", "c")
	b.Jobs[0] = orderlytest.Stateful(b.Jobs[0], []byte(`{"n":1}`), 4)
	b.Jobs[1] = orderlytest.Stateful(b.Jobs[1], []byte{0, 0xff}, 2)
	body, err := json.Marshal(requestOf(b))
	require.NoError(t, err)
	var req wire.Request
	require.NoError(t, json.Unmarshal(body, &req))
	require.True(t, req.Jobs[0].Stateful)
	require.Equal(t, `{"n":1}`, string(req.Jobs[0].State))
	require.Equal(t, int64(4), req.Jobs[0].Version)
	require.Equal(t, []byte{0, 0xff}, req.Jobs[1].State)
	require.False(t, req.Jobs[2].Stateful)
	require.Len(t, req.Jobs[2].Payloads, 1)
	require.Equal(t, "a", req.Jobs[0].ID)
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// An answer's "emit" hands each job to the id named by "from"; the node
// commits those of ids that did not fail (the failed id's are dropped), and
// an emit whose "from" is not an id of the delivery fails the request.
func TestAnswerEmits(t *testing.T) {
	t.Parallel()
	answer := `{"failed": {"b": "nope"}, "emit": [
		{"from": "a", "queue": "notify", "id": "n-a", "payload": {"paid": true}, "score": 2, "perform_in": 1.5},
		{"from": "a", "queue": "audit", "id": "x", "payload_base64": "AP8="},
		{"from": "a", "queue": "later", "id": "l-a", "perform_in": "2m", "expires_in": "1h"},
		{"from": "b", "queue": "notify", "id": "n-b"}]}`
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, answer) })
	logger, _ := logBuffer()
	s := newTestSender(t, &Config{URL: rcv.srv.URL + "/hook", Logger: logger})
	b := testBatch("a", "b")
	b.Jobs = orderlytest.NewBatch(b.Queue, b.Jobs...).Jobs // the jobs record their emits
	err := s.Handle(context.Background(), b)
	pf, ok := orderly.AsPartialFailure(err)
	require.True(t, ok, "%v", err)
	require.Contains(t, pf.Failed, "b")
	score := 2.0
	require.Equal(t, []orderly.Emit{
		{Queue: "notify", ID: "n-a", Payload: []byte(`{"paid":true}`), Score: &score, PerformIn: 1500 * time.Millisecond},
		{Queue: "audit", ID: "x", Payload: []byte{0, 0xff}},
		{Queue: "later", ID: "l-a", PerformIn: 2 * time.Minute, ExpiresIn: time.Hour},
	}, orderlytest.OutcomeOf(b.Jobs[0]).Emits)
	require.Len(t, orderlytest.OutcomeOf(b.Jobs[1]).Emits, 1, "handed over; the node drops it with the failed id")

	answer = `{"emit": [{"from": "zz", "queue": "notify", "id": "n"}]}`
	b = testBatch("a")
	err = s.Handle(context.Background(), b)
	require.Error(t, err)
	_, ok = orderly.AsPartialFailure(err)
	require.False(t, ok, "the whole request fails")
	require.ErrorContains(t, err, `"zz"`)
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
