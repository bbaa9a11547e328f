// Package redisurl turns an Orderly Redis URL into a go-redis client: one
// server, a Redis Cluster or a master found through Sentinel, each with or
// without TLS (docs/contract.md §4).
//
//	redis://[user:pass@]host:port[/db][?opts]         one server
//	rediss://...                                      one server over TLS
//	unix:///path/to/redis.sock[?db=N&opts]            one server on a socket
//	redis+cluster://[user:pass@]host:port[,host:port...][?opts]
//	rediss+cluster://...                              Cluster over TLS
//	redis+sentinel://[user:pass@]host:port[,host:port...]/<master>[/db][?opts]
//	rediss+sentinel://...                             Sentinel and master over TLS
//
// The options are go-redis's, in snake_case (dial_timeout, pool_size, ...),
// plus tls_ca_file, tls_cert_file, tls_key_file, tls_server_name and
// tls_insecure_skip_verify on the TLS schemes, and sentinel_username and
// sentinel_password on the Sentinel schemes (the user and password of the
// URL are the master's; the sentinels take none unless these are given).
// An unknown option is an error naming it. Errors and Redacted never show a
// password.
package redisurl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Kind is the deployment a URL names.
type Kind int

// The deployments.
const (
	// Standalone is one server (redis://, rediss://, unix://).
	Standalone Kind = iota
	// Cluster is a Redis Cluster (redis+cluster://, rediss+cluster://).
	Cluster
	// Sentinel is a master followed through Sentinel (redis+sentinel://,
	// rediss+sentinel://).
	Sentinel
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Cluster:
		return "cluster"
	case Sentinel:
		return "sentinel"
	default:
		return "standalone"
	}
}

// ErrInvalid is wrapped by every error of Parse.
var ErrInvalid = errors.New("invalid Redis URL")

// Example is the forms of a URL, for error messages.
const Example = "write it as redis://host:port/db, rediss://host:port/db, unix:///path/to/redis.sock, " +
	"redis+cluster://host:port,host:port or redis+sentinel://host:port,host:port/master"

// URL is a parsed Redis URL. Exactly one of the option fields is set, by
// Kind.
type URL struct {
	Kind Kind
	// Options configure a Standalone client.
	Options *redis.Options
	// ClusterOptions configure a Cluster client.
	ClusterOptions *redis.ClusterOptions
	// FailoverOptions configure a Sentinel (failover) client.
	FailoverOptions *redis.FailoverOptions

	redacted string
}

// The options this package adds to go-redis's.
const (
	paramCAFile         = "tls_ca_file"
	paramCertFile       = "tls_cert_file"
	paramKeyFile        = "tls_key_file"
	paramServerName     = "tls_server_name"
	paramInsecure       = "tls_insecure_skip_verify"
	paramSentinelUser   = "sentinel_username"
	paramSentinelPasswd = "sentinel_password"
)

// go-redis options that an Orderly URL spells otherwise: the master name and
// seed addresses are part of the URL, and credentials are in its user
// information.
var reserved = []string{"addr", "master_name", "username", "password", "skip_verify"}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Parse parses raw. Its errors wrap ErrInvalid and never contain the
// password.
func Parse(raw string) (*URL, error) {
	p, err := parseParts(raw)
	if err != nil {
		return nil, err
	}
	out := &URL{Kind: p.kind, redacted: p.redacted}
	switch p.kind {
	case Standalone:
		out.Options, err = p.standalone()
	case Cluster:
		out.ClusterOptions, err = p.cluster()
	case Sentinel:
		out.FailoverOptions, err = p.sentinel()
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// parts are a URL's pieces, checked, before go-redis reads them.
type parts struct {
	base     string // redis, rediss or unix
	kind     Kind
	u        *url.URL // the URL with its first host only
	q        url.Values
	tls      tlsParams
	sentUser string // sentinel_username, sentinel_password
	sentPass string
	hosts    []string
	redacted string
}

// parseParts splits raw into its parts and checks the scheme, the
// parameters this package adds and those an Orderly URL spells otherwise.
func parseParts(raw string) (*parts, error) {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return nil, invalid("has no scheme: %s", Example)
	}
	p := &parts{}
	if p.base, p.kind, ok = splitScheme(scheme); !ok {
		return nil, invalid("scheme %q is not one of redis, rediss, unix, redis+cluster, rediss+cluster, redis+sentinel, rediss+sentinel: %s", scheme, Example)
	}
	// url.Parse refuses a host list whose last host has no port: parse
	// the URL with the first host and keep the list aside.
	hostList, oneHost := splitAuthority(raw, len(scheme)+3)
	u, err := url.Parse(oneHost)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, password included
		}
		return nil, invalid("not a URL (%v): %s", err, Example)
	}
	p.u, p.q = u, u.Query()
	if p.tls, err = takeTLS(p.q, p.base == "rediss"); err != nil {
		return nil, err
	}
	p.sentUser, p.sentPass = p.q.Get(paramSentinelUser), p.q.Get(paramSentinelPasswd)
	if p.kind != Sentinel && (p.q.Has(paramSentinelUser) || p.q.Has(paramSentinelPasswd)) {
		return nil, invalid("unknown parameter %s (sentinel_username and sentinel_password need redis+sentinel://)", firstOf(p.q, paramSentinelUser, paramSentinelPasswd))
	}
	p.q.Del(paramSentinelUser)
	p.q.Del(paramSentinelPasswd)
	for _, name := range reserved {
		if p.q.Has(name) {
			return nil, invalid("unknown parameter %s (write it in the URL itself: %s)", name, Example)
		}
	}
	full := *u
	full.Host = hostList
	p.redacted = redact(&full)
	if p.hosts, err = splitHosts(&full, p.kind); err != nil {
		return nil, err
	}
	return p, nil
}

// goRedisURL is the URL go-redis reads: the first host, the others as addr
// options.
func (p *parts) goRedisURL() *url.URL {
	return &url.URL{Scheme: p.base, User: p.u.User, Host: p.hosts[0]}
}

func (p *parts) standalone() (*redis.Options, error) {
	g := p.goRedisURL()
	if p.base == "unix" {
		g.Host, g.Path = "", p.u.Path
	} else {
		if db := strings.Trim(p.u.Path, "/"); db != "" {
			if n, err := strconv.Atoi(db); err != nil || n < 0 {
				return nil, invalid("the path must be a database number such as /0")
			}
		}
		g.Path = p.u.Path
	}
	g.RawQuery = p.q.Encode()
	o, err := redis.ParseURL(g.String())
	if err != nil {
		return nil, goRedisErr(err)
	}
	if err := p.tls.apply(&o.TLSConfig, hostOnly(p.hosts[0])); err != nil {
		return nil, err
	}
	return o, nil
}

func (p *parts) cluster() (*redis.ClusterOptions, error) {
	if path := strings.Trim(p.u.Path, "/"); path != "" {
		return nil, invalid("a Cluster URL has no path (a Cluster has only database 0): %s", Example)
	}
	g := p.goRedisURL()
	for _, h := range p.hosts[1:] {
		p.q.Add("addr", h)
	}
	g.RawQuery = p.q.Encode()
	o, err := redis.ParseClusterURL(g.String())
	if err != nil {
		return nil, goRedisErr(err)
	}
	if err := p.tls.apply(&o.TLSConfig, hostOnly(p.hosts[0])); err != nil {
		return nil, err
	}
	return o, nil
}

func (p *parts) sentinel() (*redis.FailoverOptions, error) {
	path := strings.FieldsFunc(p.u.Path, func(r rune) bool { return r == '/' })
	if len(path) == 0 || len(path) > 2 {
		return nil, invalid("a Sentinel URL names the master after the hosts, /<master>[/db]: %s", Example)
	}
	g := p.goRedisURL()
	if len(path) == 2 {
		if n, err := strconv.Atoi(path[1]); err != nil || n < 0 {
			return nil, invalid("the database after the master name must be a number such as /0")
		}
		g.Path = "/" + path[1]
	}
	g.User = nil // go-redis takes the URL's user for the sentinels
	p.q.Set("master_name", path[0])
	for _, h := range p.hosts[1:] {
		p.q.Add("addr", h)
	}
	g.RawQuery = p.q.Encode()
	o, err := redis.ParseFailoverURL(g.String())
	if err != nil {
		return nil, goRedisErr(err)
	}
	if p.u.User != nil {
		o.Username = p.u.User.Username()
		o.Password, _ = p.u.User.Password()
	}
	o.SentinelUsername, o.SentinelPassword = p.sentUser, p.sentPass
	if err := p.tls.apply(&o.TLSConfig, hostOnly(p.hosts[0])); err != nil {
		return nil, err
	}
	return o, nil
}

// Open parses raw and returns a client for it.
func Open(raw string) (redis.UniversalClient, error) {
	u, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return u.NewClient(), nil
}

// NewClient returns a new client for the URL: a *redis.Client, a
// *redis.ClusterClient or a Sentinel-backed *redis.Client.
//
// The client leaves out CLIENT SETINFO when it opens a connection: it only
// names the library in CLIENT LIST, and it costs a round trip before a
// new connection's first command, which on a slow link delays a lease call
// by as much (docs/contract.md §2.1).
func (u *URL) NewClient() redis.UniversalClient {
	switch u.Kind {
	case Cluster:
		u.ClusterOptions.DisableIdentity = true
		return redis.NewClusterClient(u.ClusterOptions)
	case Sentinel:
		u.FailoverOptions.DisableIdentity = true
		return redis.NewFailoverClient(u.FailoverOptions)
	default:
		u.Options.DisableIdentity = true
		return redis.NewClient(u.Options)
	}
}

// Addrs returns the addresses the URL names: the server, the Cluster's
// seeds or the sentinels.
func (u *URL) Addrs() []string {
	switch u.Kind {
	case Cluster:
		return u.ClusterOptions.Addrs
	case Sentinel:
		return u.FailoverOptions.SentinelAddrs
	default:
		return []string{u.Options.Addr}
	}
}

// Redacted returns the URL with its passwords replaced by "xxxxx", for logs
// and errors.
func (u *URL) Redacted() string { return u.redacted }

// String returns Redacted, so that printing a URL never shows a password.
func (u *URL) String() string { return u.redacted }

// Redact returns raw with its passwords replaced by "xxxxx", or a fixed
// mark when raw is not a URL.
func Redact(raw string) string { return RedactWith(raw, "xxxxx") }

// RedactWith returns raw with its passwords (the user information's, and the
// password and sentinel_password options) replaced by mark, or a fixed mark
// when raw is not a URL. It takes every form Parse takes, host lists
// included, valid or not.
func RedactWith(raw, mark string) string {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok {
		return "(unparsable URL, not shown)"
	}
	hosts, oneHost := splitAuthority(raw, len(scheme)+3)
	u, err := url.Parse(oneHost)
	if err != nil {
		return "(unparsable URL, not shown)"
	}
	u.Host = hosts
	return redactWith(u, mark)
}

func redact(u *url.URL) string { return redactWith(u, "xxxxx") }

func redactWith(u *url.URL, mark string) string {
	c := *u
	if _, has := c.User.Password(); has {
		c.User = url.UserPassword(c.User.Username(), mark)
	}
	q := c.Query()
	if q.Has(paramSentinelPasswd) || q.Has("password") {
		for _, k := range []string{paramSentinelPasswd, "password"} {
			if q.Has(k) {
				q.Set(k, mark)
			}
		}
		c.RawQuery = q.Encode()
	}
	return c.String()
}

// splitAuthority returns the host list of raw (whose authority starts at
// from) and raw with only the first host of the list.
func splitAuthority(raw string, from int) (hosts, oneHost string) {
	rest := raw[from:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	at := strings.LastIndex(auth, "@")
	hosts = auth[at+1:]
	first, _, _ := strings.Cut(hosts, ",")
	return hosts, raw[:from] + auth[:at+1] + first + rest[end:]
}

func splitScheme(s string) (base string, kind Kind, ok bool) {
	switch s {
	case "redis", "rediss", "unix":
		return s, Standalone, true
	case "redis+cluster", "rediss+cluster":
		return strings.TrimSuffix(s, "+cluster"), Cluster, true
	case "redis+sentinel", "rediss+sentinel":
		return strings.TrimSuffix(s, "+sentinel"), Sentinel, true
	}
	return "", 0, false
}

// splitHosts returns host:port of every host of the URL (port 6379, or 26379
// for a sentinel, when absent).
func splitHosts(u *url.URL, kind Kind) ([]string, error) {
	if u.Scheme == "unix" {
		if strings.TrimSpace(u.Path) == "" {
			return nil, invalid("has no socket path: %s", Example)
		}
		return []string{""}, nil
	}
	if u.Host == "" {
		return nil, invalid("has no host: %s", Example)
	}
	defPort := "6379"
	if kind == Sentinel {
		defPort = "26379"
	}
	var out []string
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return nil, invalid("has an empty host in its host list: %s", Example)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil { // no port
			host, port = strings.Trim(h, "[]"), defPort
		}
		if host == "" {
			return nil, invalid("has no host: %s", Example)
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return nil, invalid("the port must be a number from 1 to 65535")
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	if len(out) > 1 && kind == Standalone {
		return nil, invalid("names several hosts; use redis+cluster:// for a Cluster or redis+sentinel:// for Sentinel")
	}
	return out, nil
}

func hostOnly(hostport string) string {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	return h
}

// goRedisErr rewords go-redis's parse errors (which never hold the URL).
func goRedisErr(err error) error {
	msg := err.Error()
	if r, ok := strings.CutPrefix(msg, "redis: unexpected option: "); ok {
		return invalid("unknown parameter %s", r)
	}
	return invalid("%s", strings.TrimPrefix(msg, "redis: "))
}

func firstOf(q url.Values, names ...string) string {
	for _, n := range names {
		if q.Has(n) {
			return n
		}
	}
	return names[0]
}

// tlsParams are the TLS options of a URL.
type tlsParams struct {
	caFile, certFile, keyFile, serverName string
	insecure                              bool
}

// takeTLS removes the TLS options from q; they need a TLS scheme.
func takeTLS(q url.Values, isTLS bool) (tlsParams, error) {
	var p tlsParams
	names := []string{paramCAFile, paramCertFile, paramKeyFile, paramServerName, paramInsecure}
	for _, n := range names {
		if q.Has(n) && !isTLS {
			return p, invalid("parameter %s needs a TLS scheme (rediss://, rediss+cluster://, rediss+sentinel://)", n)
		}
	}
	p.caFile, p.certFile, p.keyFile, p.serverName = q.Get(paramCAFile), q.Get(paramCertFile), q.Get(paramKeyFile), q.Get(paramServerName)
	if q.Has(paramInsecure) {
		b, err := strconv.ParseBool(q.Get(paramInsecure))
		if err != nil {
			return p, invalid("parameter %s must be true or false", paramInsecure)
		}
		p.insecure = b
	}
	if (p.certFile == "") != (p.keyFile == "") {
		return p, invalid("parameters %s and %s go together", paramCertFile, paramKeyFile)
	}
	for _, n := range names {
		q.Del(n)
	}
	return p, nil
}

// apply completes the TLS configuration go-redis made for a TLS scheme.
func (p tlsParams) apply(cfg **tls.Config, host string) error {
	if *cfg == nil {
		return nil
	}
	c := *cfg
	if c.MinVersion == 0 {
		c.MinVersion = tls.VersionTLS12
	}
	if c.ServerName == "" {
		c.ServerName = host
	}
	if p.serverName != "" {
		c.ServerName = p.serverName
	}
	c.InsecureSkipVerify = p.insecure
	if p.caFile != "" {
		pem, err := os.ReadFile(p.caFile)
		if err != nil {
			return invalid("%s: %v", paramCAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return invalid("%s: %s holds no PEM certificate", paramCAFile, p.caFile)
		}
		c.RootCAs = pool
	}
	if p.certFile != "" {
		cert, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
		if err != nil {
			return invalid("%s, %s: %v", paramCertFile, paramKeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return nil
}
