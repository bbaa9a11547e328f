package webhook

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
)

// failedOf returns what an answer fails: nil, nil when it acknowledges
// every id without an object, the ids of "failed" (an empty map without
// it) otherwise.
func failedOf(body []byte) (map[string]string, error) {
	a, err := decodeAnswer(body)
	if a == nil || err != nil {
		return nil, err
	}
	if a.Failed == nil {
		return map[string]string{}, nil
	}
	return a.Failed, nil
}

// FuzzDecodeAnswer checks that the decoder of 2xx bodies never panics, that
// it classifies every body as exactly one of acknowledge-all, failed ids or
// bad answer, consistently, and that the batch's outcome follows from that
// classification.
func FuzzDecodeAnswer(f *testing.F) {
	seeds := []string{
		"",
		" \r\n\t",
		"\u00a0", // not JSON whitespace
		`{"failed": {}}`,
		`{"failed": {"a": "boom"}}`,
		`{"failed": {"a": "boom", "zz": "not in the batch"}}`,
		`{"failed": {"zz": "not in the batch"}}`,
		`{"failed": {"a": ""}}`,
		`{"failed": {"a": null}}`,
		`{"failed": {"a": 1}}`,
		`{"failed": {"a": ["x"]}}`,
		`{"failed": null}`,
		`{"failed": []}`,
		`{"failed": "a"}`,
		`{"failed": {}, "extra": 1}`,
		`{"retry_in": {"a": 1.5}, "dead": {"b": "x"}}`,
		`{"retry_in": {"a": "10m"}, "discard": {"zz": "x"}}`,
		`{"retry_in": {"a": -1}}`,
		`{"dead": {"a": "x"}, "failed": {"a": "y"}}`,
		`{"Failed": {}}`,
		`{"failed": {"a": "x"}, "failed": {"b": "y"}}`,
		`{"failed": {"a": "x", "a": "y"}}`,
		`{"failed": {"a": "\ud800"}}`,
		"{\"failed\": {\"\xff\": \"\xfe\"}}",
		`{}`,
		`null`,
		`[]`,
		`"ok"`,
		`0`,
		`{"failed": {}} x`,
		`{"failed": {}}{"failed": {}}`,
		`{"failed": {"a": "x"`,
		"OK\n",
		strings.Repeat("[", 20_000),
		strings.Repeat(`{"failed":`, 100),
	}
	for _, seed := range seeds {
		f.Add([]byte(seed))
	}

	batch := testBatch("a", "b")
	s := &Sender{
		safeURL:  "http://receiver/hook",
		logger:   slog.New(slog.DiscardHandler),
		maxBytes: DefaultMaxResponseBytes,
	}
	ok := answerHead{code: http.StatusOK, status: "200 OK"}

	f.Fuzz(func(t *testing.T, body []byte) {
		failed, err := failedOf(body)

		again, errAgain := failedOf(body)
		require.Equal(t, failed, again, "decoding is deterministic")
		require.Equal(t, err == nil, errAgain == nil, "decoding is deterministic")

		blank := len(bytes.Trim(body, " \t\r\n")) == 0
		switch {
		case err != nil:
			require.ErrorIs(t, err, errBadAnswer)
			require.Nil(t, failed)
			require.False(t, blank, "a blank body acknowledges all")
		case failed == nil:
			require.True(t, blank, "only a blank body acknowledges all without an object")
		default:
			require.True(t, json.Valid(body))
			encoded, mErr := json.Marshal(map[string]any{"failed": failed})
			require.NoError(t, mErr)
			roundTrip, rErr := failedOf(encoded)
			require.NoError(t, rErr)
			require.Equal(t, failed, roundTrip, "what was decoded encodes back to the same answer")
		}

		if int64(len(body)) > s.maxBytes {
			return
		}
		out := s.outcome(batch, ok, body)
		pf, partial := orderly.AsPartialFailure(out)
		switch {
		case err != nil:
			require.Error(t, out)
			require.False(t, partial)
			require.ErrorIs(t, out, errBadAnswer)
		case partial:
			a, _ := decodeAnswer(body)
			decided := decisions(a)
			for _, j := range batch.Jobs {
				msg, inFailed := failed[j.ID]
				_, inAnswer := decided[j.ID]
				failedErr, inOutcome := pf.Failed[j.ID]
				require.Equal(t, inAnswer, inOutcome, "id %q", j.ID)
				if inFailed && msg != "" {
					require.EqualError(t, failedErr, msg)
				}
			}
			require.LessOrEqual(t, len(pf.Failed), len(batch.Jobs), "only ids of the batch fail")
		default:
			require.NoError(t, out)
			a, _ := decodeAnswer(body)
			if a != nil {
				decided := decisions(a)
				for _, j := range batch.Jobs {
					require.NotContains(t, decided, j.ID)
				}
			}
		}
	})
}
