package webhook

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orderlyhq/orderly"
)

// FuzzDecodePullAnswer checks that the decoder of pull answers never
// panics, that {} and an empty body acknowledge every id, that every other
// body decodes as a webhook answer would, and that a decoded answer applies
// to a batch without panicking.
func FuzzDecodePullAnswer(f *testing.F) {
	for _, s := range []string{"", " ", "{}", " { } ", `{"failed":{"a":"x"}}`, `{"retry_in":{"a":"1s"}}`,
		`{"dead":{"a":""},"discard":{"b":"y"}}`, `{"emit":[{"from":"a","queue":"q","id":"x"}]}`, `{"x":1}`, `[]`, `null`,
		`{"state":{"a":{"n":1}}}`, `{"result":{"a":[1]}}`, `{"timers":{"a":"2026-01-01T00:00:00Z"}}`,
		`{"next":{"max_ids":1,"wait":1}}`, `{"failed":{"a":"x"},"next":{"max_ids":5,"wait":0.5}}`, `{"next":null}`,
		`{"next":{"max_ids":0,"wait":1}}`, `{"next":{"max_ids":12,"wait":0.125}}`, `{"next":{"max_ids":1,"wait":30}}`,
		`{"next":{"max_ids":01,"wait":1}}`, `{"next":{"max_ids":1,"wait":1.}}`, `{"next":{"max_ids":1,"wait":1e1}}`, `{"next":{"max_ids":1,"wait":31}}`, `{"next":{"max_ids":1,"x":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if qn, ok := quickNext(body); ok {
			a, next, err := decodePullAnswer(body)
			if err != nil || a != nil || next == nil || *next != *qn {
				t.Fatalf("quick decoding of %q: %+v; the general one: %v, %+v, %v", body, qn, a, next, err)
			}
		}
		a, next, err := DecodePullAnswer(body)
		if err != nil {
			if !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("error does not wrap ErrBadAnswer: %v", err)
			}
			return
		}
		if next != nil && (next.MaxIDs < 1 || next.Wait < 0 || next.Wait > MaxPullWait) {
			t.Fatalf("accepted next of %q: %+v", body, next)
		}
		if a != nil {
			// Without its "next", the body decodes as a webhook answer.
			var top map[string]json.RawMessage
			if json.Unmarshal(body, &top) != nil {
				t.Fatalf("decoded %q, which is not an object", body)
			}
			delete(top, "next")
			rest, _ := json.Marshal(top)
			if want, werr := decodeAnswer(rest); werr != nil || want == nil {
				t.Fatalf("decoded %q, which a webhook answer refuses: %v", body, werr)
			}
		}
		b := &orderly.Batch{Queue: "q", Jobs: []orderly.Job{}}
		if CheckPullAnswer(b, a) == nil {
			_ = ApplyPullAnswer(b, a, nil)
		}
	})
}

func TestDecodePullAnswerEmptyObjectAcknowledgesAll(t *testing.T) {
	for _, s := range []string{"", " \n", "{}", " {\n} "} {
		a, next, err := DecodePullAnswer([]byte(s))
		if err != nil || a != nil || next != nil {
			t.Fatalf("%q: %v, %v, %v", s, a, next, err)
		}
	}
	if _, _, err := DecodePullAnswer([]byte(`{"nope":1}`)); !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("unknown member: %v", err)
	}
}

func TestDecodePullAnswerNext(t *testing.T) {
	a, next, err := DecodePullAnswer([]byte(` {"next": {"max_ids": 5, "wait": 0.25}} `))
	if err != nil || a != nil || next == nil || *next != (PullNext{MaxIDs: 5, Wait: 250 * time.Millisecond}) {
		t.Fatalf("next alone: %v, %+v, %v", a, next, err)
	}
	a, next, err = DecodePullAnswer([]byte(`{"failed":{"a":"x"},"next":{"max_ids":1,"wait":0}}`))
	if err != nil || a == nil || a.Failed["a"] != "x" || next == nil || *next != (PullNext{MaxIDs: 1}) {
		t.Fatalf("answer and next: %+v, %+v, %v", a, next, err)
	}
	if next, ok := quickNext([]byte(`{"next":{"max_ids":5,"wait":0.25}}`)); !ok || *next != (PullNext{MaxIDs: 5, Wait: 250 * time.Millisecond}) {
		t.Fatalf("the Go worker's body takes the quick path: %+v, %v", next, ok)
	}
	for body, want := range map[string]string{
		`{"next":null}`:                      `"next" must be`,
		`{"next":{"wait":1}}`:                `next.max_ids must be at least 1, got 0`,
		`{"next":{"max_ids":1,"wait":-1}}`:   `next.wait must be 0 to 30 seconds`,
		`{"next":{"max_ids":1,"wait":30.5}}`: `next.wait must be 0 to 30 seconds`,
		`{"next":{"max_ids":1,"by":1}}`:      `"next" must be`,
		`{"next":{"max_ids":1},"nope":1}`:    `the object's only members may be`,
	} {
		_, _, err := DecodePullAnswer([]byte(body))
		if !errors.Is(err, ErrBadAnswer) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want %q", body, err, want)
		}
	}
}

// AppendPullJobs appends to what the slice holds the jobs PullJobs
// returns, payloads and all.
func TestAppendPullJobs(t *testing.T) {
	t.Parallel()
	at := time.Unix(1790000000, 125_000_000)
	b := &orderly.Batch{Queue: "q", Jobs: []orderly.Job{
		{ID: "a", RetryCount: -1, PerformAt: at, Payloads: []orderly.Payload{{Data: []byte(`1`), Score: 1}, {Data: []byte(`2`), Score: 2, Headers: map[string]string{"k": "v"}}}},
		{ID: "b", RetryCount: 2, Error: "boom", Payloads: []orderly.Payload{{Data: []byte(`"x"`), Score: 3}}},
	}}
	first := PullJobs(&orderly.Batch{Queue: "q", Jobs: []orderly.Job{{ID: "z", Payloads: []orderly.Payload{{Data: []byte(`0`)}}}}})
	got := AppendPullJobs(first, b)
	want := append(PullJobs(&orderly.Batch{Queue: "q", Jobs: []orderly.Job{{ID: "z", Payloads: []orderly.Payload{{Data: []byte(`0`)}}}}}), PullJobs(b)...)
	if len(got) != 3 || got[0].ID != "z" || got[1].ID != "a" || got[2].Error != "boom" || len(got[1].Payloads) != 2 {
		t.Fatalf("got %+v", got)
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("got %s, want %s", gj, wj)
	}
}
