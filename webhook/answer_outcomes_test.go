package webhook

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// The outcome members of an answer (docs/webhooks.md, docs/contract.md
// §3.11): "retry_in" in seconds or as a duration string, "dead", "discard".
func TestAnswerOutcomes(t *testing.T) {
	a, err := decodeAnswer([]byte(`{"retry_in": {"a": 1.5, "b": "10m", "z": 0}, "dead": {"c": "poison"}, "discard": {"d": ""}, "failed": {"e": "x"}}`))
	require.NoError(t, err)
	require.Equal(t, map[string]wire.Delay{"a": wire.Delay(1500 * time.Millisecond), "b": wire.Delay(10 * time.Minute), "z": 0}, a.RetryIn)
	require.Equal(t, map[string]string{"c": "poison"}, a.Dead)
	require.Equal(t, map[string]string{"d": ""}, a.Discard)

	s := &Sender{safeURL: "http://receiver/hook", logger: slog.New(slog.DiscardHandler), maxBytes: DefaultMaxResponseBytes}
	b := testBatch("a", "b", "c", "d", "e", "f")
	out := s.outcome(b, answerHead{code: http.StatusOK, status: "200 OK"},
		[]byte(`{"retry_in": {"a": 2, "b": "1m", "nope": 3}, "dead": {"c": "poison"}, "discard": {"d": "old"}, "failed": {"e": "x"}}`))
	pf, ok := orderly.AsPartialFailure(out)
	require.True(t, ok, "%v", out)
	require.Len(t, pf.Failed, 5, "f is acknowledged, the id not in the batch ignored")
	require.EqualError(t, pf.Failed["a"], "snoozed for 2s")
	require.EqualError(t, pf.Failed["b"], "snoozed for 1m0s")
	require.EqualError(t, pf.Failed["c"], "dead: poison")
	require.EqualError(t, pf.Failed["d"], "discarded: old")
	require.EqualError(t, pf.Failed["e"], "x")

	// A Go receiver builds such an answer with the wire types.
	raw, err := json.Marshal(wire.Answer{RetryIn: map[string]wire.Delay{"a": wire.Delay(90 * time.Second)}, Dead: map[string]string{"c": "r"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"retry_in": {"a": 90}, "dead": {"c": "r"}}`, string(raw))
	back, err := decodeAnswer(raw)
	require.NoError(t, err)
	require.Equal(t, wire.Delay(90*time.Second), back.RetryIn["a"])
}

// Every bad shape of the outcome members is a bad answer: the request
// fails as a whole, as for a bad "failed".
func TestAnswerOutcomesBadShapes(t *testing.T) {
	for _, body := range []string{
		`{"retry_in": {"a": -1}}`,
		`{"retry_in": {"a": "-1s"}}`,
		`{"retry_in": {"a": "soon"}}`,
		`{"retry_in": {"a": null}}`,
		`{"retry_in": {"a": true}}`,
		`{"retry_in": {"a": [1]}}`,
		`{"retry_in": {"a": 1e400}}`,
		`{"retry_in": {"a": 1e300}}`,
		`{"retry_in": [1]}`,
		`{"retry_in": null}`,
		`{"dead": {"a": 1}}`,
		`{"dead": {"a": null}}`,
		`{"dead": null}`,
		`{"dead": "a"}`,
		`{"discard": {"a": {}}}`,
		`{"discard": []}`,
		`{"failed": {"a": "x"}, "dead": {"a": "y"}}`,
		`{"retry_in": {"a": 1}, "discard": {"a": "y"}}`,
		`{"dead": {"a": "x"}, "discard": {"a": "y"}}`,
		`{"retry_in": {"a": 1}, "failed": {"a": "y"}}`,
		`{"Retry_in": {"a": 1}}`,
	} {
		_, err := decodeAnswer([]byte(body))
		require.ErrorIs(t, err, errBadAnswer, body)
		s := &Sender{safeURL: "http://receiver/hook", logger: slog.New(slog.DiscardHandler), maxBytes: DefaultMaxResponseBytes}
		out := s.outcome(testBatch("a"), answerHead{code: http.StatusOK, status: "200 OK"}, []byte(body))
		require.ErrorIs(t, out, errBadAnswer, body)
		_, partial := orderly.AsPartialFailure(out)
		require.False(t, partial)
	}
}
