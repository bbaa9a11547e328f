package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/orderlyhq/orderly/web/internal/jsonscan"
)

// AnyHost in Config.AllowedHosts turns the Host check off.
const AnyHost = "*"

// hostCheck decides which Host names a server answers to when no token
// protects it: a web page whose name rebinds to 127.0.0.1 (DNS rebinding)
// sends its own name as Host, which is neither a loopback address, nor
// localhost, nor the address the request arrived on.
type hostCheck struct {
	on      bool            // false: every Host is accepted
	allowed map[string]bool // AllowedHosts, normalized
}

func newHostCheck(cfg *Config) (hostCheck, error) {
	hc := hostCheck{on: cfg.Token == "" || cfg.PublicReads, allowed: map[string]bool{}}
	for _, h := range cfg.AllowedHosts {
		if h == AnyHost {
			hc.on = false
			continue
		}
		name, ok := hostName(h)
		if !ok || !isIP(name) && strings.ContainsFunc(name, notNameChar) {
			return hostCheck{}, fmt.Errorf("web: AllowedHosts: %q is not a host name or address", h)
		}
		hc.allowed[name] = true
	}
	return hc, nil
}

// allows reports whether r may be answered. A request without a Host
// (HTTP/1.0) is not a browser's and passes.
func (hc hostCheck) allows(r *http.Request) bool {
	if !hc.on || r.Host == "" {
		return true
	}
	name, ok := hostName(r.Host)
	if !ok {
		return false
	}
	if name == "localhost" || hc.allowed[name] {
		return true
	}
	ip, err := netip.ParseAddr(name)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return true
	}
	// The address the request arrived on: a page cannot rebind a name to
	// an address literal.
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(local.String()); err == nil && ap.Addr().Unmap().WithZone("") == ip.WithZone("") {
			return true
		}
	}
	return false
}

// hostName returns the lower-case name or address of a Host header value
// (host, host:port, [v6] or [v6]:port), without a trailing dot.
func hostName(host string) (string, bool) {
	name := host
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 || end+1 < len(host) && host[end+1] != ':' {
			return "", false
		}
		name = host[1:end]
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 {
		if strings.Count(host, ":") > 1 { // a bare IPv6 address
			if !isIP(host) {
				return "", false
			}
		} else {
			name = host[:i]
		}
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	// One trailing dot names the root; a second is an empty label.
	return name, name != "" && !strings.HasSuffix(name, ".")
}

// notNameChar reports whether r cannot be part of a lower-case host name.
func notNameChar(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_')
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// misdirected is the answer to a Host the server does not answer to.
func misdirected(r *http.Request) *apiError {
	return &apiError{status: http.StatusMisdirectedRequest, msg: fmt.Sprintf(
		"host %q is not served here: without a token this server answers only to localhost, loopback addresses and its own address; "+
			"add the name to the allowed hosts (http_allowed_hosts) or set a token", jsonscan.Truncate(r.Host, 64))}
}
