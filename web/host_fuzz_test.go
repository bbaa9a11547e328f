package web

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
)

// FuzzHostCheck feeds arbitrary Host header values to the check of a server
// without a token: it never panics; a value it accepts names localhost, a
// loopback address, the address the request arrived on or an allowed host;
// and a name with a port is judged as the name.
func FuzzHostCheck(f *testing.F) {
	for _, seed := range []string{
		"", "localhost", "localhost:8080", "LOCALHOST.", "127.0.0.1", "127.0.0.1:1", "[::1]", "[::1]:80",
		"[::ffff:127.0.0.1]:80", "::1", "evil.example", "evil.example:80", "orderly.internal", "10.0.0.5:8080",
		"[fe80::1%eth0]:80", "[", "]", ":", "[::1]x", "127.0.0.1.nip.io", "0", "localhost.evil", "\x00", "é.example",
		"127.0.0.0..", "localhost..:80",
	} {
		f.Add(seed)
	}
	hc, err := newHostCheck(&Config{AllowedHosts: []string{"orderly.internal"}})
	if err != nil {
		f.Fatal(err)
	}
	local := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}
	f.Fuzz(func(t *testing.T, host string) {
		r := (&http.Request{Host: host}).WithContext(context.WithValue(context.Background(), http.LocalAddrContextKey, local))
		ok := hc.allows(r)
		name, parsed := hostName(host)
		if host == "" {
			if !ok {
				t.Fatal("a request without Host passes")
			}
			return
		}
		if ok && !parsed {
			t.Fatalf("accepted %q, which does not parse", host)
		}
		if ok && name != "localhost" && name != "orderly.internal" && !strings.HasPrefix(name, "127.") && name != "10.0.0.5" && !strings.Contains(name, ":") {
			t.Fatalf("accepted %q (name %q)", host, name)
		}
		if parsed && !strings.HasPrefix(host, "[") && !strings.Contains(name, ":") {
			// The port does not matter: host:port is judged as host.
			r2 := (&http.Request{Host: name + ":1"}).WithContext(r.Context())
			if hc.allows(r2) != ok && strings.Count(host, ":") <= 1 {
				t.Fatalf("%q and %q judged differently", host, name+":1")
			}
		}
	})
}
