package webhook

import (
	"errors"
	"testing"

	"github.com/orderlyhq/orderly"
)

// FuzzDecodePullAnswer checks that the decoder of pull answers never
// panics, that {} and an empty body acknowledge every id, that every other
// body decodes as a webhook answer would, and that a decoded answer applies
// to a batch without panicking.
func FuzzDecodePullAnswer(f *testing.F) {
	for _, s := range []string{"", " ", "{}", " { } ", `{"failed":{"a":"x"}}`, `{"retry_in":{"a":"1s"}}`,
		`{"dead":{"a":""},"discard":{"b":"y"}}`, `{"emit":[{"from":"a","queue":"q","id":"x"}]}`, `{"x":1}`, `[]`, `null`,
		`{"state":{"a":{"n":1}}}`, `{"result":{"a":[1]}}`, `{"timers":{"a":"2026-01-01T00:00:00Z"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := DecodePullAnswer(body)
		if err != nil {
			if !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("error does not wrap ErrBadAnswer: %v", err)
			}
			return
		}
		want, werr := decodeAnswer(body)
		if a != nil && (werr != nil || want == nil) {
			t.Fatalf("decoded %q, which a webhook answer refuses: %v", body, werr)
		}
		b := &orderly.Batch{Queue: "q", Jobs: []orderly.Job{}}
		if CheckPullAnswer(b, a) == nil {
			_ = ApplyPullAnswer(b, a, nil)
		}
	})
}

func TestDecodePullAnswerEmptyObjectAcknowledgesAll(t *testing.T) {
	for _, s := range []string{"", " \n", "{}", " {\n} "} {
		a, err := DecodePullAnswer([]byte(s))
		if err != nil || a != nil {
			t.Fatalf("%q: %v, %v", s, a, err)
		}
	}
	if _, err := DecodePullAnswer([]byte(`{"nope":1}`)); !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("unknown member: %v", err)
	}
}
