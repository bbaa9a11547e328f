package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// failedFixture queues, in q, fresh jobs "fresh1" and "later" (due in an
// hour) and failed jobs "bad1" (two payloads) and "bad2", due in a minute.
func failedFixture(t *testing.T, e *env) {
	t.Helper()
	e.enqueue(`[{"id": "bad1", "payload": {"n": 1}, "score": 1}, {"id": "bad1", "payload": {"n": 2}, "score": 2}, {"id": "bad2"}]`)
	e.failDue(func(string) time.Time { return e.clock.Now().Add(time.Minute) })
	e.enqueue(`[{"id": "fresh1"}, {"id": "later", "perform_in": 3600}]`)
}

func (e *env) action(queue, action, body string) answer {
	e.t.Helper()
	return e.do("POST", "/api/v1/queues/"+queue+"/actions/"+action, body)
}

func TestActionPerformAllNow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failedFixture(t, e)
	e.clock.Advance(10 * time.Second)
	a := e.action("q", "perform_all_now", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"updated":3}`+"\n", a.body, "the jobs due later: bad1, bad2, later")
	now := persistence.UnixSeconds(e.clock.Now())
	for id, at := range map[string]float64{"bad1": now, "bad2": now, "later": now, "fresh1": 1_700_000_000} {
		l, _ := e.get(id)
		require.Equal(t, at, l.Queued.PerformAt, id)
	}
	l, _ := e.get("bad1")
	require.Equal(t, 0, l.Queued.RetryCount, "only perform_at changes")
	require.Equal(t, "err-bad1", l.Queued.Error)
	require.Len(t, l.Queued.Payloads, 2)

	a = e.action("q", "perform_all_now", "{}")
	require.Equal(t, `{"updated":0}`+"\n", a.body, "nothing is due later now")
}

func TestActionKillFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failedFixture(t, e)
	a := e.action("q", "kill_failed", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"killed":2}`+"\n", a.body)
	for _, id := range []string{"bad1", "bad2"} {
		l, _ := e.get(id)
		require.Nil(t, l.Queued, "%s is only in the morgue", id)
		require.NotNil(t, l.Morgue, id)
	}
	a = e.do("GET", "/api/v1/queues/q/morgue", "")
	require.Equal(t, `{"entries":[`+
		`{"id":"bad1","updated_at":1700000000,"first_at":1700000000,"error":"err-bad1","payloads":[{"payload":{"n":1},"score":1},{"payload":{"n":2},"score":2}],"payload_count":2},`+
		`{"id":"bad2","updated_at":1700000000,"first_at":1700000000,"error":"err-bad2","payloads":[{"payload":"","score":1700000000}],"payload_count":1}],"next":""}`+"\n", a.body)
	p := e.listJobs("")
	require.Len(t, p.Jobs, 2, "fresh jobs stay")
	a = e.action("q", "kill_failed", "")
	require.Equal(t, `{"killed":0}`+"\n", a.body)
}

func TestActionDeleteFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failedFixture(t, e)
	a := e.action("q", "delete_failed", " { } ")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"deleted":2}`+"\n", a.body)
	p := e.listJobs("")
	require.Equal(t, []string{"fresh1", "later"}, []string{p.Jobs[0].ID, p.Jobs[1].ID})
	require.Len(t, p.Jobs, 2)
	require.Contains(t, e.stats(), `"q":{"length":2,"morgue_length":0,`, "nothing went to the morgue")
}

func TestActionBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failedFixture(t, e)
	for _, c := range []struct {
		path, body, field, msg string
		status                 int
		headers                []string
	}{
		{path: "/api/v1/queues/q/actions/nope", field: "action", msg: `unknown action "nope" (known: perform_all_now, kill_failed, delete_failed)`, status: http.StatusNotFound},
		{path: "/api/v1/queues/q/actions/Kill_Failed", field: "action", status: http.StatusNotFound},
		{path: "/api/v1/queues/q/actions/kill_failed%00", field: "action", status: http.StatusNotFound},
		{path: "/api/v1/queues/q/actions/" + strings.Repeat("x", 5000), field: "action", status: http.StatusNotFound},
		{path: "/api/v1/queues/q/actions/%E2%80%AE", field: "action", status: http.StatusNotFound},
		{path: "/api/v1/queues/q/actions/kill_failed/now", msg: "no endpoint", status: http.StatusNotFound},
		{path: "/api/v1/queues/nope/actions/kill_failed", field: "queue", status: http.StatusNotFound},
		{path: "/api/v1/queues/no%2Fpe/actions/kill_failed", field: "queue", status: http.StatusBadRequest},
		{path: "/api/v1/queues/q/actions/kill_failed?all=1", field: "all", status: http.StatusBadRequest},
		{path: "/api/v1/queues/q/actions/kill_failed", body: `{"all": true}`, field: "all", msg: "all: unknown field: this endpoint takes no body (or {})", status: http.StatusBadRequest},
		{path: "/api/v1/queues/q/actions/kill_failed", body: `[]`, msg: "this endpoint takes no body (or {}), got an array", status: http.StatusBadRequest},
		{path: "/api/v1/queues/q/actions/kill_failed", body: `null`, msg: "got null", status: http.StatusBadRequest},
		{path: "/api/v1/queues/q/actions/kill_failed", body: `"go"`, msg: "got a string", status: http.StatusBadRequest},
		{path: "/api/v1/queues/q/actions/kill_failed", body: `{}{}`, msg: "malformed JSON", status: http.StatusBadRequest},
		{path: "/api/v1/queues/q/actions/kill_failed", body: "\xff", msg: "malformed JSON", status: http.StatusBadRequest},
		{path: "/api/v1/queues/q/actions/kill_failed", body: `{}`, headers: []string{"Content-Type", "text/plain"}, status: http.StatusUnsupportedMediaType},
		{path: "/api/v1/queues/q/actions/kill_failed", body: strings.Repeat(" ", 9<<20), msg: "larger than the limit", status: http.StatusRequestEntityTooLarge},
	} {
		a := e.do("POST", c.path, c.body, c.headers...)
		require.Equal(t, c.status, a.status, "%s %.40q: %s", c.path, c.body, a.body)
		msg, field := a.errorBody(t)
		require.Equal(t, c.field, field, c.path)
		require.Contains(t, msg, c.msg, c.path)
		require.Less(t, len(a.body), 1000, "the answer does not echo a huge value")
	}
	stats, err := e.store.Stats(e.ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 4, stats[0].Length, "no rejected request changed anything")
	require.EqualValues(t, 2, stats[0].Retries)
	require.Zero(t, stats[0].MorgueLength)

	// curl -d '' sends a form Content-Type with an empty body: accepted.
	a := e.action("q", "delete_failed", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("POST", "/api/v1/queues/q/actions/delete_failed", "", "Content-Type", "application/x-www-form-urlencoded")
	require.Equal(t, http.StatusOK, a.status, a.body)
}

func TestMorgueDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, id := range []string{"m1", "m2", "m3", "a/b"} {
		e.enqueue(fmt.Sprintf(`[{"id": %q, "payload": %q}]`, id, id))
		e.kill(id)
	}
	e.enqueue(`[{"id": "m1", "payload": "queued"}]`) // queued with the same id: not touched
	a := e.do("POST", "/api/v1/queues/q/morgue/delete", `{"ids": ["m1", "a/b", "unknown", "m1"]}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"deleted":2}`+"\n", a.body)
	a = e.do("GET", "/api/v1/queues/q/morgue", "")
	var page struct {
		Entries []struct {
			ID string `json:"id"`
		} `json:"entries"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &page))
	require.Len(t, page.Entries, 2)
	require.Equal(t, "m2", page.Entries[0].ID)
	require.Equal(t, "m3", page.Entries[1].ID)
	l, _ := e.get("m1")
	require.Len(t, l.Queued.Payloads, 1)
	require.Equal(t, `"queued"`, string(l.Queued.Payloads[0].Data))
	require.InDelta(t, 1_700_000_000, l.Queued.Payloads[0].Score, 1e-3, "default score: now, strictly increasing per shard")

	a = e.do("POST", "/api/v1/queues/q/morgue/delete", `{"ids": []}`)
	require.Equal(t, `{"deleted":0}`+"\n", a.body)
	a = e.do("POST", "/api/v1/queues/q/morgue/delete", `{"all": true}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"deleted":2}`+"\n", a.body)
	a = e.do("GET", "/api/v1/queues/q/morgue", "")
	require.Equal(t, `{"entries":[],"next":""}`+"\n", a.body)
	require.Contains(t, e.stats(), `"q":{"length":1,"morgue_length":0,`)
}

func TestSelectionBodyErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(`[{"id": "m"}]`)
	e.kill("m")
	for _, path := range []string{"/api/v1/queues/q/morgue/delete", "/api/v1/queues/q/morgue/requeue"} {
		for _, c := range []struct {
			body, field, msg string
			status           int
		}{
			{body: `{}`, field: "ids", msg: `ids: required: give "ids": [...] or "all": true`},
			{body: `{"all": false}`, field: "all", msg: `all: must be true; to select given entries send {"ids": [...]}`},
			{body: `{"all": 1}`, field: "all", msg: "must be true, got a number"},
			{body: `{"all": "true"}`, field: "all", msg: "got a string"},
			{body: `{"ids": "m"}`, field: "ids", msg: "must be an array of ids, got a string"},
			{body: `{"ids": {"m": true}}`, field: "ids", msg: "got an object"},
			{body: `{"ids": [["m"]]}`, field: "ids[0]", msg: "must be a string, got an array"},
			{body: `{"ids": ["m", null]}`, field: "ids[1]", msg: "got null"},
			{body: `{"ids": ["` + strings.Repeat("é", 257) + `"]}`, field: "ids[0]", msg: "longer than 512 bytes"},
			{body: `{"ids": ["\ud800m"]}`, field: "ids[0]", msg: "not valid UTF-8"},
			{body: "{\"ids\": [\"\xffm\"]}", field: "ids[0]", msg: "not valid UTF-8"},
			{body: `{"ids": ["m"], "ids": ["m"]}`, field: "ids", msg: "given more than once"},
			{body: `{"ids": ["m"], "all": true}`, field: "all", msg: "not both"},
			{body: `{"Ids": ["m"]}`, field: "Ids", msg: "unknown field"},
			{body: `{"ids": ["m"]} {}`, msg: "malformed JSON"},
			{body: `"m"`, msg: "got a string"},
			{body: `true`, msg: "got a boolean"},
			{body: `[{"all": true}]`, msg: "got an array"},
			{body: ` `, msg: "the request body is empty"},
			{body: `{"ids": [` + strings.Repeat(`"m",`, 3<<20) + `"m"]}`, msg: "larger than the limit", status: http.StatusRequestEntityTooLarge},
		} {
			a := e.do("POST", path, c.body)
			status := c.status
			if status == 0 {
				status = http.StatusBadRequest
			}
			require.Equal(t, status, a.status, "%s %.60s: %s", path, c.body, a.body)
			msg, field := a.errorBody(t)
			require.Equal(t, c.field, field, "%.60s", c.body)
			require.Contains(t, msg, c.msg, "%.60s", c.body)
		}
		a := e.do("POST", path+"?all=1", `{"all": true}`)
		require.Equal(t, http.StatusBadRequest, a.status, a.body)
		_, field := a.errorBody(t)
		require.Equal(t, "all", field)
		a = e.do("POST", strings.Replace(path, "/q/", "/nope/", 1), `{"all": true}`)
		require.Equal(t, http.StatusNotFound, a.status, a.body)
	}
	stats, err := e.store.Stats(e.ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 1, stats[0].MorgueLength, "no rejected request changed anything")
}

func (e *env) jobAction(id, action, body string) answer {
	e.t.Helper()
	return e.do("POST", "/api/v1/queues/q/jobs/"+escapeID(id)+"/actions/"+action, body)
}

func TestJobActionPerformNow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failedFixture(t, e)
	e.clock.Advance(10 * time.Second)
	now := persistence.UnixSeconds(e.clock.Now())
	e.enqueue(`[{"id": "a/actions/b", "perform_in": 60}]`)
	for _, id := range []string{"bad1", "later", "a/actions/b"} {
		a := e.jobAction(id, "perform_now", "")
		require.Equal(t, http.StatusOK, a.status, "%s: %s", id, a.body)
		require.Equal(t, `{"updated":1}`+"\n", a.body)
		l, _ := e.get(id)
		require.Equal(t, now, l.Queued.PerformAt, id)
	}
	// An unescaped '/' in the id works too.
	e.enqueue(`[{"id": "x/y", "perform_in": 60}]`)
	a := e.do("POST", "/api/v1/queues/q/jobs/x/y/actions/perform_now", "{}")
	require.Equal(t, http.StatusOK, a.status, a.body)
	l, _ := e.get("x/y")
	require.Equal(t, now, l.Queued.PerformAt)

	l, _ = e.get("bad1")
	require.Equal(t, 0, l.Queued.RetryCount, "the retry count is kept")
	require.Equal(t, "err-bad1", l.Queued.Error)
	l, _ = e.get("bad2")
	require.NotEqual(t, now, l.Queued.PerformAt, "other jobs keep their time")
}

func TestJobActionKill(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failedFixture(t, e)
	a := e.jobAction("bad1", "kill", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"killed":1}`+"\n", a.body)
	a = e.jobAction("fresh1", "kill", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	l, _ := e.get("bad1")
	require.Nil(t, l.Queued, "only in the morgue")
	require.Equal(t, "err-bad1", l.Morgue.Error)
	a = e.do("GET", "/api/v1/queues/q/morgue", "")
	require.Equal(t, `{"entries":[`+
		`{"id":"bad1","updated_at":1700000000,"first_at":1700000000,"error":"err-bad1","payloads":[{"payload":{"n":1},"score":1},{"payload":{"n":2},"score":2}],"payload_count":2},`+
		`{"id":"fresh1","updated_at":1700000000,"first_at":1700000000,"error":"killed","payloads":[{"payload":"","score":1700000000}],"payload_count":1}],"next":""}`+"\n", a.body)
	l, _ = e.get("bad2")
	require.NotNil(t, l.Queued, "other jobs stay")
}

func TestJobActionErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(`[{"id": "busy", "payload": 1}, {"id": "keep"}]`)
	e.fetch("busy")
	for _, action := range []string{"perform_now", "kill"} {
		a := e.jobAction("busy", action, "")
		require.Equal(t, http.StatusConflict, a.status, a.body)
		msg, _ := a.errorBody(t)
		require.Contains(t, msg, `job "busy" of "q" is in flight and has nothing queued`)
		a = e.jobAction("nope", action, "")
		require.Equal(t, http.StatusNotFound, a.status, a.body)
		msg, _ = a.errorBody(t)
		require.Equal(t, `job "nope" is not queued in "q"`, msg)
	}
	l, _ := e.get("busy")
	require.NotNil(t, l.Processing, "the in-flight batch is intact")
	for _, c := range []struct {
		path, body, field string
		status            int
	}{
		{"/api/v1/queues/nope/jobs/keep/actions/kill", "", "queue", http.StatusNotFound},
		{"/api/v1/queues/q/jobs/keep/actions/explode", "", "action", http.StatusNotFound},
		{"/api/v1/queues/q/jobs/keep/other/kill", "", "", http.StatusNotFound},
		{"/api/v1/queues/q/jobs/%2Factions/kill", "", "id", http.StatusBadRequest},
		{"/api/v1/queues/q/jobs/" + strings.Repeat("x", 513) + "/actions/kill", "", "id", http.StatusBadRequest},
		{"/api/v1/queues/q/jobs/keep/actions/kill?x=1", "", "x", http.StatusBadRequest},
		{"/api/v1/queues/q/jobs/keep/actions/kill", `{"id": 1}`, "id", http.StatusBadRequest},
	} {
		a := e.do("POST", c.path, c.body)
		require.Equal(t, c.status, a.status, "%s: %s", c.path, a.body)
		_, field := a.errorBody(t)
		require.Equal(t, c.field, field, c.path)
	}
	l, _ = e.get("keep")
	require.NotNil(t, l.Queued, "a refused action changes nothing")
}
