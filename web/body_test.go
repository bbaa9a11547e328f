package web_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web"
)

// dripEnqueue opens a connection that announces an enqueue body of
// length bytes and sends only its first sent bytes.
func dripEnqueue(t *testing.T, addr string, length int, sent string) *rawConn {
	t.Helper()
	c := dial(t, addr)
	c.send("POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(length) + "\r\n\r\n" + sent)
	return c
}

// Clients that drip their enqueue bodies hold no enqueue slot: with more of
// them than there are slots (64), another client's enqueue is answered at
// once.
func TestSlowBodiesDoNotStarveEnqueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // the default limits: 64 enqueue slots
	addr := e.ts.Listener.Addr().String()
	var drips []*rawConn
	for range web.DefaultMaxConcurrentEnqueues + 6 {
		drips = append(drips, dripEnqueue(t, addr, 1000, "["))
	}
	// Let the server read every header, so that the drips are in their
	// handlers (nothing to poll: a dripping request shows nowhere).
	time.Sleep(100 * time.Millisecond)
	for _, c := range drips[:10] {
		c.send(" ") // still dripping
	}

	start := time.Now()
	a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "legit"}]`, "Content-Type", "application/json")
	t.Logf("enqueue beside %d dripping bodies: %d after %s", len(drips), a.status, time.Since(start).Round(time.Millisecond))
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	e.get("legit")

	// A dripping body that completes is enqueued too.
	c := drips[0]
	body := `{"id": "dripped"}]`
	c.send(body + strings.Repeat(" ", 1000-2-len(body)))
	res, answer, err := c.answer(waitClose)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, res.StatusCode, answer)
	e.get("dripped")
}

// The bytes of bodies in flight are bounded: a body that does not fit waits
// until others are done, then is served.
func TestBodyBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slow := &slowStore{Store: e.store, release: make(chan struct{})}
	srv, err := web.New(&web.Config{Store: slow, MaxBodyBytes: 1024, MaxBodyBytesInFlight: 2048})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	release := sync.OnceFunc(func() { close(slow.release) })
	t.Cleanup(release) // before ts.Close, should the test fail half-way
	post := func(id string, size int) <-chan int {
		body := `[{"id": "` + id + `"}`
		body += strings.Repeat(" ", size-1-len(body)) + "]"
		done := make(chan int, 1)
		go func() {
			res, err := ts.Client().Post(ts.URL+"/api/v1/queues/q/jobs", "application/json", strings.NewReader(body))
			if err != nil {
				done <- 0
				return
			}
			res.Body.Close()
			done <- res.StatusCode
		}()
		return done
	}
	// Two bodies of 1000 bytes are read and held while the store holds
	// their enqueues: 2000 of the 2048 bytes.
	first, second := post("first", 1000), post("second", 1000)
	require.Eventually(t, func() bool { return slow.running.Load() == 2 }, waitClose, time.Millisecond)
	// A third body of 100 bytes does not fit: it does not reach the store.
	third := post("third", 100)
	time.Sleep(300 * time.Millisecond) // nothing to poll: the third must not arrive
	require.EqualValues(t, 2, slow.running.Load(), "the third body waits for room")
	release()
	for _, done := range []<-chan int{first, second, third} {
		require.Equal(t, http.StatusAccepted, <-done)
	}
	for _, id := range []string{"first", "second", "third"} {
		e.get(id)
	}
}
