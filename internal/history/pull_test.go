package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/webhook/wire"
)

// pullLog writes the lines of a pull worker's record.
type pullLog struct {
	t   *testing.T
	t0  time.Time
	buf bytes.Buffer
}

func (l *pullLog) at(ms int) time.Time { return l.t0.Add(time.Duration(ms) * time.Millisecond) }

func (l *pullLog) add(e PullEvent) {
	b, err := json.Marshal(e)
	require.NoError(l.t, err)
	l.buf.Write(append(b, '\n'))
}

// lease records a lease of one id with payloads data (scores 1, 2, ...),
// pulled at ms with a deadline at deadlineMs; sentMs < 0: never answered.
func (l *pullLog) lease(lease, id string, ms, deadlineMs, sentMs int, a *wire.Answer, status int, data ...string) {
	j := wire.Job{ID: id}
	for i, d := range data {
		j.Payloads = append(j.Payloads, wire.Payload{Data: []byte(d), Score: float64(i + 1)})
	}
	deadline := float64(l.at(deadlineMs).UnixMilli()) / 1000
	l.add(PullEvent{Kind: PullEventPull, Worker: "w1", Node: "n1", Lease: lease, At: l.at(ms), Deadline: deadline, Jobs: []wire.Job{j}})
	if sentMs < 0 {
		return
	}
	l.add(PullEvent{Kind: PullEventSend, Lease: lease, At: l.at(sentMs), Answer: a})
	if status >= 0 {
		e := PullEvent{Kind: PullEventAnswer, Lease: lease, At: l.at(sentMs + 2), Status: status}
		if status == 409 {
			e.Reason = "deadline passed"
		}
		l.add(e)
	}
}

func (l *pullLog) calls() []PullCall {
	calls, err := ReadPull(bytes.NewReader(l.buf.Bytes()))
	require.NoError(l.t, err)
	return calls
}

func newPullLog(t *testing.T) *pullLog { return &pullLog{t: t, t0: time.Unix(1_700_000_000, 0)} }

var lateDead = &wire.Answer{Dead: map[string]string{"x": "late answer"}}

// A worker paused past its lease's deadline answers late and is refused
// while the next holder's answer is taken: the audit is clean, and counts
// the late refusal and the stale holder.
func TestCheckPullLateRefused(t *testing.T) {
	t.Parallel()
	l := newPullLog(t)
	l.lease("a", "x", 0, 1000, 2500, lateDead, 409, "x1")
	l.lease("b", "x", 1100, 2100, 1200, nil, 200, "x1", "x2")
	rep := CheckPull(l.calls(), map[string][]string{"x": {"x1", "x2"}}, nil)
	require.True(t, rep.OK(), rep.String())
	require.Equal(t, []int{2, 1, 1, 1, 1, 1}, []int{rep.Leases, rep.Accepted, rep.Refused, rep.Late, rep.LateRefused, rep.StaleOverlaps}, rep.String())
}

// A broken fence: the late answer is taken. The audit says so, and the
// payloads it sent to the morgue are unexplained.
func TestCheckPullLateAccepted(t *testing.T) {
	t.Parallel()
	l := newPullLog(t)
	l.lease("a", "x", 0, 1000, 2500, lateDead, 200, "x1")
	l.lease("b", "x", 1100, 2100, 1200, nil, 200, "x1", "x2")
	rep := CheckPull(l.calls(), map[string][]string{"x": {"x1", "x2"}}, map[string][]string{"x": {"x1"}})
	require.False(t, rep.OK())
	require.Len(t, rep.LateAccepted, 1, rep.String())
	require.Equal(t, []string{`id "x": payload "x1" is in the morgue, but no accepted answer sent in time answered it dead`}, rep.UnexplainedDead)
	require.Contains(t, rep.String(), "1 calls answered late (0 refused, 1 accepted, 0 not delivered or without a response)")

	// Sent a millisecond before the deadline the node wrote: in time.
	ok := newPullLog(t)
	ok.lease("a", "x", 0, 1000, 999, &wire.Answer{Dead: map[string]string{"x": "poison"}}, 200, "x1")
	rep = CheckPull(ok.calls(), map[string][]string{"x": {"x1"}}, map[string][]string{"x": {"x1"}})
	require.True(t, rep.OK(), rep.String())
	require.Zero(t, rep.Late)
}

// Two accepted calls of an id overlap: a breach. A refused or never
// answered one that overlaps is not; an unsure one counts for what was
// lost only.
func TestCheckPullOverlapsAndLost(t *testing.T) {
	t.Parallel()
	l := newPullLog(t)
	l.lease("a", "x", 0, 1000, 300, nil, 200, "x1")
	l.lease("b", "x", 200, 1200, 400, nil, 200, "x1", "x2")
	rep := CheckPull(l.calls(), map[string][]string{"x": {"x1", "x2"}}, nil)
	require.Len(t, rep.Overlaps, 1, rep.String())

	l = newPullLog(t)
	l.lease("a", "x", 0, 1000, 300, nil, 409, "x1")
	l.lease("b", "x", 100, 1100, -1, nil, 0, "x1")
	l.lease("c", "x", 200, 1200, 250, nil, -1, "x1", "x2") // sent, no response: unsure
	l.lease("d", "y", 0, 1000, 100, nil, 200, "y1")
	calls := l.calls()
	rep = CheckPull(calls, map[string][]string{"x": {"x1", "x2"}, "y": {"y1", "y2"}}, nil)
	require.Empty(t, rep.Overlaps, rep.String())
	require.Equal(t, []string{`id "y": payload "y2" neither acknowledged, discarded nor in the morgue`}, rep.Lost)
	require.Equal(t, []int{1, 1, 1, 1}, []int{rep.Accepted, rep.Refused, rep.Unsure, rep.Unanswered})
	require.True(t, calls[2].Unsure())

	// A refused answer acknowledges nothing.
	rep = CheckPull(calls[:2], map[string][]string{"x": {"x1"}}, nil)
	require.Len(t, rep.Lost, 1, rep.String())
}

// Payloads out of score order are a breach in any call, accepted or not.
func TestCheckPullOrder(t *testing.T) {
	t.Parallel()
	l := newPullLog(t)
	deadline := float64(l.at(1000).UnixMilli()) / 1000
	job := wire.Job{ID: "x", Payloads: []wire.Payload{{Data: []byte("x2"), Score: 2}, {Data: []byte("x1"), Score: 1}}}
	l.add(PullEvent{Kind: PullEventPull, Lease: "a", At: l.at(0), Deadline: deadline, Jobs: []wire.Job{job}})
	l.add(PullEvent{Kind: PullEventSend, Lease: "a", At: l.at(10)})
	l.add(PullEvent{Kind: PullEventAnswer, Lease: "a", At: l.at(20), Status: 409})
	rep := CheckPull(l.calls(), nil, nil)
	require.Len(t, rep.OrderViolations, 1, rep.String())
}

// A record's last line cut short is ignored; a bad line before others is
// an error, and so is an answer of a lease never pulled.
func TestReadPull(t *testing.T) {
	t.Parallel()
	l := newPullLog(t)
	l.lease("a", "x", 0, 1000, 300, &wire.Answer{Failed: map[string]string{"x": "no"}}, 200, "x1")
	calls, err := ReadPull(strings.NewReader(l.buf.String() + `{"kind":"pu`))
	require.NoError(t, err)
	require.Len(t, calls, 1)
	require.False(t, calls[0].Acked)
	require.Equal(t, l.at(1000), calls[0].Deadline)
	require.True(t, calls[0].Accepted())

	_, err = ReadPull(strings.NewReader(`{"kind":"pu` + "\n" + l.buf.String()))
	require.Error(t, err)
	_, err = ReadPull(strings.NewReader(`{"kind":"answer","lease":"z","status":200}` + "\n"))
	require.ErrorContains(t, err, "never pulled")
}

// An extension moves the deadline the audit judges an answer by: to what a
// 200 gave, or, with no response, to the most it may have given; a 409
// moves nothing.
func TestCheckPullExtensions(t *testing.T) {
	t.Parallel()
	l := newPullLog(t)
	j := wire.Job{ID: "x", Payloads: []wire.Payload{{Data: []byte("x1"), Score: 1}}}
	lease := func(name string, extend PullEvent) {
		l.add(PullEvent{Kind: PullEventPull, Lease: name, At: l.at(0), Deadline: float64(l.at(1000).UnixMilli()) / 1000, Jobs: []wire.Job{j}})
		extend.Kind, extend.Lease = PullEventExtend, name
		l.add(extend)
		l.add(PullEvent{Kind: PullEventSend, Lease: name, At: l.at(1500)})
		l.add(PullEvent{Kind: PullEventAnswer, Lease: name, At: l.at(1502), Status: 200})
	}
	lease("ok", PullEvent{At: l.at(600), By: 1, Status: 200, Deadline: float64(l.at(1600).UnixMilli()) / 1000})
	lease("maybe", PullEvent{At: l.at(600), By: 1})                        // no response: up to 1600
	lease("refused", PullEvent{At: l.at(600), By: 1, Status: 409})         // ended: 1000
	lease("not-sent", PullEvent{At: l.at(600), By: 1, NotDelivered: true}) // never read: 1000
	calls := l.calls()
	for i, want := range []int{1600, 1600, 1000, 1000} {
		require.True(t, calls[i].Deadline.Equal(l.at(want)), "%s: %s", calls[i].Lease, calls[i].Deadline)
	}
	rep := CheckPull(calls[:2], nil, nil)
	require.Empty(t, rep.LateAccepted, rep.String())
	require.Equal(t, 2, rep.Extended)
	rep = CheckPull(calls[2:], nil, nil)
	require.Len(t, rep.LateAccepted, 2, rep.String())
	require.Equal(t, []int{2, 1}, []int{rep.Extended, rep.ExtendRefused})
}
