package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An enqueue whose Orderly-Deadline has passed by the time the node would
// store it is refused with 408 naming the deadline, and stores nothing: a
// request held up in a paused node is not applied after its producer gave
// up (and perhaps sent later payloads of the same ids elsewhere). A
// deadline still ahead, in any RFC 3339 form, stores as usual; a malformed
// one is a 400 naming the header (docs/contract.md §2.3, §6.3).
func TestEnqueuePastItsDeadlineIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.clock.Now()
	body := `[{"id":"late","payload":1},{"id":"late2","payload":2}]`

	for _, d := range []time.Time{now.Add(-time.Second), now.Add(-time.Millisecond), now} {
		a := e.do("POST", "/api/v1/queues/q/jobs", body, "Content-Type", "application/json",
			"Orderly-Deadline", d.UTC().Format(time.RFC3339Nano))
		require.Equal(t, http.StatusRequestTimeout, a.status, a.body)
		msg, field := a.errorBody(t)
		require.Empty(t, field, "no field of the body is at fault")
		require.Contains(t, msg, "Orderly-Deadline "+d.UTC().Format("2006-01-02T15:04:05.000Z"))
		require.Contains(t, msg, "nothing was stored")
		e.requireEmpty("q")
	}

	// Still ahead, as RFC 3339 with milliseconds (what webhooks carry) or
	// with an offset and no fraction.
	e.enqueue(body, "Content-Type", "application/json",
		"Orderly-Deadline", now.Add(time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	e.enqueue(`[{"id":"soon","payload":3}]`, "Content-Type", "application/json",
		"Orderly-Deadline", now.Add(time.Hour).In(time.FixedZone("", 2*3600)).Format(time.RFC3339))
	for _, id := range []string{"late", "late2", "soon"} {
		e.get(id)
	}

	for _, bad := range []string{"1700000000.5", "tomorrow", "2023-11-14 22:13:20"} {
		a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id":"bad"}]`, "Content-Type", "application/json", "Orderly-Deadline", bad)
		require.Equal(t, http.StatusBadRequest, a.status, a.body)
		msg, field := a.errorBody(t)
		require.Equal(t, "Orderly-Deadline", field)
		require.Contains(t, msg, "RFC 3339")
	}
	a := e.do("GET", "/api/v1/queues/q/jobs/bad", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
}
