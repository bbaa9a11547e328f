package web

import (
	"fmt"
	"net/http"
	"strings"
)

// ValidateBasePath checks a base path (Config.BasePath): empty, or '/'
// followed by segments of letters, digits, '-', '.', '_' and '~' separated
// by single slashes, without a trailing slash, "." or "..".
func ValidateBasePath(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q must start with '/', as in /orderly", p)
	}
	if p == "/" || strings.HasSuffix(p, "/") {
		return fmt.Errorf("%q must not end with '/': write /orderly, or nothing to serve at the root", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%q has an empty, '.' or '..' segment", p)
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c)) {
				return fmt.Errorf("%q: only letters, digits, '-', '.', '_', '~' and '/' between segments are allowed", p)
			}
		}
	}
	return nil
}

// underBase returns r with the base path taken off its path, and whether
// r was under it: the base path itself is the dashboard's root. The
// probes also answer at the root, for orchestrators that reach the node
// without the proxy.
func (s *Server) underBase(r *http.Request) (*http.Request, bool) {
	p := r.URL.Path
	if p == "/healthz" || p == "/readyz" {
		return r, true
	}
	rest, ok := strings.CutPrefix(p, s.base)
	if !ok || rest != "" && rest[0] != '/' {
		return r, false
	}
	// The base path has no character that escapes, so the escaped path
	// starts with it too.
	raw, _ := strings.CutPrefix(r.URL.RawPath, s.base)
	if rest == "" {
		rest, raw = "/", ""
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, u.RawPath = rest, raw
	r2.URL = &u
	return r2, true
}
