package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// ErrBadAnswer is wrapped by the errors of DecodePullAnswer and
// CheckPullAnswer: the answer is not one the node can take.
var ErrBadAnswer = errBadAnswer

// MaxPullWait bounds the wait of a pull and of an answer's next pull
// (apiv1.MaxPullWait seconds).
const MaxPullWait = 30 * time.Second

// PullNext is the "next" member of a pull answer (docs/contract.md §6.6):
// the pull the node makes for the worker once the answer is accepted, with
// a pull's values.
type PullNext struct {
	// MaxIDs bounds the ids of the next lease; at least 1.
	MaxIDs int
	// Wait is how long the next pull may wait for a batch, 0 to
	// MaxPullWait.
	Wait time.Duration
}

// DecodePullAnswer decodes the answer of a pull worker (docs/contract.md
// §6.6): the shape of a webhook answer, except that an empty object, like
// an empty body, acknowledges every id (a nil answer), and that it may
// carry "next": {"max_ids": n, "wait": seconds}, the pull to make once the
// answer is accepted (nil when absent). It must not panic on any input.
func DecodePullAnswer(body []byte) (*wire.Answer, *PullNext, error) {
	if next, ok := quickNext(body); ok {
		return nil, next, nil
	}
	return decodePullAnswer(body)
}

// decodePullAnswer is DecodePullAnswer for any body.
func decodePullAnswer(body []byte) (*wire.Answer, *PullNext, error) {
	trimmed := bytes.Trim(body, jsonSpace)
	if len(trimmed) == 0 || string(trimmed) == "{}" {
		return nil, nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &top); err != nil || top == nil {
		return nil, nil, badAnswer("not a JSON object")
	}
	var next *PullNext
	if raw, ok := top["next"]; ok {
		delete(top, "next")
		n, err := decodePullNext(raw)
		if err != nil {
			return nil, nil, err
		}
		next = n
	}
	if len(top) == 0 {
		return nil, next, nil
	}
	a, err := decodeMembers(top)
	if err != nil {
		return nil, nil, err
	}
	return a, next, nil
}

// quickNext decodes the body that workers send most, a next pull and
// every id done, when it is written exactly
// {"next":{"max_ids":<digits>,"wait":<digits[.digits]>}} with valid
// values; ok is false for anything else, which decodePullAnswer decides.
func quickNext(body []byte) (next *PullNext, ok bool) {
	rest, ok := bytes.CutPrefix(body, []byte(`{"next":{"max_ids":`))
	if !ok {
		return nil, false
	}
	i := bytes.IndexByte(rest, ',')
	if i < 1 || i > 9 || rest[0] == '0' || !allDigits(rest[:i]) {
		return nil, false
	}
	maxIDs, _ := strconv.Atoi(string(rest[:i])) // 1 to 9 digits
	num, ok := bytes.CutPrefix(rest[i:], []byte(`,"wait":`))
	if !ok {
		return nil, false
	}
	if num, ok = bytes.CutSuffix(num, []byte("}}")); !ok {
		return nil, false
	}
	whole, frac, dot := bytes.Cut(num, []byte("."))
	if len(whole) == 0 || (len(whole) > 1 && whole[0] == '0') || !allDigits(whole) ||
		(dot && (len(frac) == 0 || !allDigits(frac))) {
		return nil, false
	}
	wait, err := strconv.ParseFloat(string(num), 64)
	if err != nil || wait > MaxPullWait.Seconds() {
		return nil, false
	}
	return &PullNext{MaxIDs: maxIDs, Wait: time.Duration(wait * float64(time.Second))}, true
}

// allDigits reports whether b holds only ASCII digits.
func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// decodePullNext decodes and checks an answer's "next", as the body of a
// pull is checked.
func decodePullNext(raw json.RawMessage) (*PullNext, error) {
	var v struct {
		MaxIDs int     `json:"max_ids"`
		Wait   float64 `json:"wait"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if bytes.Equal(bytes.Trim(raw, jsonSpace), []byte("null")) || dec.Decode(&v) != nil {
		return nil, badAnswer(`"next" must be {"max_ids": n, "wait": seconds}`)
	}
	if v.MaxIDs < 1 {
		return nil, badAnswer(fmt.Sprintf("next.max_ids must be at least 1, got %d", v.MaxIDs))
	}
	if math.IsNaN(v.Wait) || v.Wait < 0 || v.Wait > MaxPullWait.Seconds() {
		return nil, badAnswer(fmt.Sprintf("next.wait must be 0 to %d seconds", int(MaxPullWait.Seconds())))
	}
	return &PullNext{MaxIDs: v.MaxIDs, Wait: time.Duration(v.Wait * float64(time.Second))}, nil
}

// CheckPullAnswer returns an error wrapping ErrBadAnswer when an emit of a
// names in "from" an id that is not in b, as a webhook answer's would fail
// the request.
func CheckPullAnswer(b *orderly.Batch, a *wire.Answer) error {
	if a == nil {
		return nil
	}
	return checkEmits(b, a)
}

// ApplyPullAnswer turns a decoded answer (nil: every id acknowledged) into
// b's outcome exactly as a webhook's 2xx answer is: the state, timers,
// emits and results go to b's jobs, and the ids the answer fails, snoozes,
// kills or discards make the returned error (nil when none). Ids not in b
// are ignored and logged. Check the answer with CheckPullAnswer first.
func ApplyPullAnswer(b *orderly.Batch, a *wire.Answer, logger *slog.Logger) error {
	if a == nil {
		return nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Sender{logger: logger, safeURL: "pull worker"}
	if len(a.State) > 0 || len(a.Timers) > 0 {
		s.applyStates(b, a)
	}
	applyEmits(b, a)
	s.applyResults(b, a)
	return s.failIDs(b, decisions(a))
}

// PullJobs returns the jobs of b in the shape of a webhook request's jobs
// (wire.Job), for a pull worker.
func PullJobs(b *orderly.Batch) []wire.Job { return requestOf(b).Jobs }

// AppendPullJobs appends what PullJobs returns to dst: a lease of many
// calls gathers their jobs in one slice.
func AppendPullJobs(dst []wire.Job, b *orderly.Batch) []wire.Job { return appendJobs(dst, b) }
