//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
)

// hostsFile answers lookups of seed names from the file HostsEnv names,
// read at every lookup.
type hostsFile string

// answers returns what the file lists for name.
func (h hostsFile) answers(name string) ([]string, error) {
	b, err := os.ReadFile(string(h))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("chaos: hosts file: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) > 0 && strings.TrimSuffix(f[0], ".") == strings.TrimSuffix(name, ".") {
			return f[1:], nil
		}
	}
	return nil, nil
}

func notFound(name string) error {
	return &net.DNSError{Err: "no such host (" + HostsEnv + ")", Name: name, IsNotFound: true}
}

// LookupHost returns the bare IP addresses listed for host.
func (h hostsFile) LookupHost(_ context.Context, host string) ([]string, error) {
	all, err := h.answers(host)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range all {
		if net.ParseIP(a) != nil {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, notFound(host)
	}
	return out, nil
}

// LookupSRV returns the host:port answers listed for name as SRV records.
func (h hostsFile) LookupSRV(_ context.Context, _, _, name string) (string, []*net.SRV, error) {
	all, err := h.answers(name)
	if err != nil {
		return "", nil, err
	}
	var out []*net.SRV
	for _, a := range all {
		host, p, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		port, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			continue
		}
		out = append(out, &net.SRV{Target: host + ".", Port: uint16(port)})
	}
	if len(out) == 0 {
		return "", nil, notFound(name)
	}
	return name, out, nil
}
