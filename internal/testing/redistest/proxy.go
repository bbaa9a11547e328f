package redistest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy is a TCP proxy in front of a Redis (toxiproxy): a test points one
// client at it and cuts that client's connections while others still reach
// the server.
type Proxy struct {
	// Addr is the proxy's address; clients connect there.
	Addr string
	p    *toxiproxy.Proxy
}

// NewProxy starts a proxy to upstream on a free port of 127.0.0.1; it is
// stopped when the test ends.
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "redis", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("redistest: start proxy: %v", err)
	}
	t.Cleanup(p.Stop)
	return &Proxy{Addr: p.Listen, p: p}
}

// Cut closes every connection through the proxy and refuses new ones.
func (x *Proxy) Cut() { x.p.Stop() }

// Restore accepts connections again, on the same address.
func (x *Proxy) Restore(t testing.TB) {
	t.Helper()
	if err := x.p.Start(); err != nil {
		t.Fatalf("redistest: restart proxy: %v", err)
	}
}

// Latency delays every byte through the proxy so that a request and its
// answer take rtt more (half on the way in, half on the way out), for
// existing and new connections, until the test ends.
func (x *Proxy) Latency(t testing.TB, rtt time.Duration) {
	t.Helper()
	for _, stream := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"latency_%s","type":"latency","stream":%q,"toxicity":1,"attributes":{"latency":%d}}`,
			stream, stream, (rtt / 2).Milliseconds())
		if _, err := x.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			t.Fatalf("redistest: add a latency toxic: %v", err)
		}
	}
}
