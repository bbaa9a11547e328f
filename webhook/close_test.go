package webhook

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Close ends everything of the sender's own clients: the receiver sees its
// connections closed, no goroutine of the sender remains (net/http's keeps
// two per idle connection), and Handle fails afterwards. Not parallel:
// goleak counts the goroutines of the whole process.
func TestCloseLeavesNothing(t *testing.T) {
	for _, netHTTP := range []bool{false, true} {
		srv := newCountingServer(t, answerWith(http.StatusOK, ""))
		before := goleak.IgnoreCurrent()
		s, err := New(&Config{URL: srv.URL, NetHTTP: netHTTP})
		require.NoError(t, err)
		for range 3 {
			require.NoError(t, s.Handle(context.Background(), testBatch("a")))
		}
		require.EqualValues(t, 1, srv.opened.Load(), "one kept-alive connection")
		if netHTTP {
			require.Error(t, goleak.Find(before), "net/http's connection goroutines run while it is idle")
		} else {
			require.Equal(t, 1, s.direct.Idle())
		}

		require.NoError(t, s.Close())
		require.Eventually(t, func() bool { return srv.closed.Load() == 1 }, 5*time.Second, time.Millisecond,
			"the idle connection is closed at once, not after the idle timeout")
		require.NoError(t, goleak.Find(before), "net/http=%v", netHTTP)
		require.ErrorIs(t, s.Handle(context.Background(), testBatch("a")), ErrClosed)
		require.NoError(t, s.Close(), "idempotent")
		srv.Close()
	}
}

// A caller's Config.Client is the caller's: Close leaves its connections
// alone.
func TestCloseLeavesTheCallersClient(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, answerWith(http.StatusOK, ""))
	client := srv.Client()
	s, err := New(&Config{URL: srv.URL, Client: client})
	require.NoError(t, err)
	require.NoError(t, s.Handle(context.Background(), testBatch("a")))
	require.NoError(t, s.Close())
	req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.EqualValues(t, 1, srv.opened.Load(), "the client's connection was kept")
}
