package web_test

import (
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web"
)

// DNS rebinding: a web page on evil.example whose name is made to resolve to
// 127.0.0.1 sends same-origin requests, with its own name as Host, to a
// node without a token. Such a node answers only to localhost, loopback
// addresses, its own address and the allowed hosts; other names get 421
// and change nothing.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // no token, on 127.0.0.1
	_, port, err := net.SplitHostPort(e.ts.Listener.Addr().String())
	require.NoError(t, err)
	rebinding := []string{
		"evil.example", "evil.example:" + port, "EVIL.example.:" + port, "127.0.0.1.nip.io:" + port,
		"localhost.evil.example", "evil.localhost.example", "[::1].evil", "10.1.2.3:" + port, "0:" + port,
	}
	for _, host := range rebinding {
		t.Run("refused "+host, func(t *testing.T) {
			for _, req := range []struct{ method, path, body string }{
				{"GET", "/api/v1/queues", ""},
				{"POST", "/api/v1/queues/q/jobs", `[{"id": "rebind-1", "perform_in": 3600}]`},
				{"DELETE", "/api/v1/queues/q/jobs/x", ""},
				{"GET", "/metrics", ""},
			} {
				a := e.do(req.method, req.path, req.body, "Host", host, "Origin", "http://"+host,
					"Sec-Fetch-Site", "same-origin", "Content-Type", "application/json")
				require.Equal(t, http.StatusMisdirectedRequest, a.status, "%s %s: %s", req.method, req.path, a.body)
				msg, field := a.errorBody(t)
				require.Contains(t, msg, "is not served here")
				require.Empty(t, field)
				require.True(t, a.close, "Connection: close")
			}
		})
	}
	e.requireEmpty("q")

	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LocalHost.:" + port, "localhost", "127.9.9.9", "[::1]:" + port, "[::ffff:127.0.0.1]:" + port} {
		a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "local"}]`, "Host", host, "Content-Type", "application/json")
		require.Equal(t, http.StatusAccepted, a.status, "Host %s: %s", host, a.body)
	}

	// The allowed hosts; "*" turns the check off.
	allowed := newEnv(t, func(c *web.Config) { c.AllowedHosts = []string{"orderly.internal", "10.0.0.7"} })
	for host, status := range map[string]int{
		"orderly.internal": 200, "ORDERLY.internal:8080": 200, "10.0.0.7:80": 200, "localhost": 200,
		"evil.example": 421, "sub.orderly.internal": 421, "10.0.0.8": 421,
	} {
		a := allowed.do("GET", "/api/v1/queues", "", "Host", host)
		require.Equal(t, status, a.status, "Host %s: %s", host, a.body)
	}
	anyHost := newEnv(t, func(c *web.Config) { c.AllowedHosts = []string{web.AnyHost} })
	require.Equal(t, http.StatusOK, anyHost.do("GET", "/api/v1/queues", "", "Host", "evil.example").status)

	// With a token, a rebinding page cannot authenticate: any Host passes
	// to the token check.
	withToken := newEnv(t, func(c *web.Config) { c.Token = "tok" })
	require.Equal(t, http.StatusUnauthorized, withToken.do("GET", "/api/v1/queues", "", "Host", "evil.example").status)
	require.Equal(t, http.StatusOK, withToken.do("GET", "/api/v1/queues", "", "Host", "orderly.example", "Authorization", "Bearer tok").status)

	_, err = web.New(&web.Config{Store: e.store, AllowedHosts: []string{"a b"}})
	require.ErrorContains(t, err, `AllowedHosts: "a b" is not a host name`)
}

// The address a request arrived on is accepted as Host: a page cannot make
// its name an address literal. Another address is not.
func TestHostCheckOwnAddress(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP(t)
	e := newEnv(t)
	public := serveOn(t, net.JoinHostPort(ip, "0"), &web.Config{Store: e.store})
	local := serve(t, &web.Config{Store: e.store})
	other := "198.51.100.1" // TEST-NET-2
	requireNotLocal(t, other)
	for _, tc := range []struct {
		addr, host string
		status     int
	}{
		{public, public, http.StatusOK},
		{public, ip, http.StatusOK},
		{public, "localhost", http.StatusOK},
		{public, other, http.StatusMisdirectedRequest},
		{local, public, http.StatusMisdirectedRequest},
		{local, local, http.StatusOK},
	} {
		c := dial(t, tc.addr)
		c.send("GET /healthz HTTP/1.1\r\nHost: " + tc.host + "\r\n\r\n")
		res, body, err := c.answer(waitClose)
		require.NoError(t, err)
		require.Equal(t, tc.status, res.StatusCode, "Host %s on %s: %s", tc.host, tc.addr, body)
	}
}

// nonLoopbackIP returns an IPv4 address of this machine that is not a
// loopback one, or skips the test.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return ""
}

// requireNotLocal skips the test if ip is an address of this machine.
func requireNotLocal(t *testing.T, ip string) {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.String() == ip {
			t.Skipf("%s is an address of this machine", ip)
		}
	}
}
