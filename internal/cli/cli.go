// Package cli implements the orderly command's subcommands, which talk to a
// running node over its HTTP API: members (and, as they come, enqueue,
// stats, morgue). Output is a table for people, or JSON with --json.
//
// Exit codes: 0 success; 1 the node could not be reached or answered an
// error; 2 bad usage.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// DefaultHTTP is the node address the subcommands talk to by default.
const DefaultHTTP = "127.0.0.1:8080"

// commands are the subcommands by name.
var commands = map[string]func(*env, []string) int{
	"members": members,
}

// IsCommand reports whether name is a subcommand.
func IsCommand(name string) bool {
	_, ok := commands[name]
	return ok
}

// env is what a subcommand works with.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// Run runs the subcommand named by args[0] and returns the exit code.
func Run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "orderly: unknown command %q\n", args[0])
		return ExitUsage
	}
	return cmd(&env{stdout: stdout, stderr: stderr, getenv: getenv}, args[1:])
}

// conn holds the flags every subcommand shares: where the node is.
type conn struct {
	http  string
	token string
	json  bool
}

func (e *env) flags(name, usage string) (*flag.FlagSet, *conn) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	c := &conn{}
	def := DefaultHTTP
	if v := e.getenv("ORDERLY_HTTP"); v != "" {
		def = v
	}
	fs.StringVar(&c.http, "http", def, "address of a node's HTTP API, host:port or URL (env ORDERLY_HTTP)")
	fs.StringVar(&c.token, "http-token", e.getenv("ORDERLY_HTTP_TOKEN"), "bearer token of the HTTP API (env ORDERLY_HTTP_TOKEN)")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of a table")
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: orderly %s [flags]\n\n%s\n\nFlags:\n", name, usage)
		fs.PrintDefaults()
	}
	return fs, c
}

// parse parses flags; it returns an exit code when the command must stop.
func (e *env) parse(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK, true
		}
		return ExitUsage, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "orderly %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return ExitUsage, true
	}
	return 0, false
}

// apiError is an error answer of the API.
type apiError struct {
	Status int
	Msg    string `json:"error"`
	Field  string `json:"field"`
}

func (e *apiError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (field %s; HTTP %d)", e.Msg, e.Field, e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Msg, e.Status)
}

var client = &http.Client{Timeout: 30 * time.Second}

// call sends a request to the node and decodes a JSON answer into out.
func (c *conn) call(ctx context.Context, method, path string, body io.Reader, out any) error {
	base := c.http
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("--http %q is not an address", c.http)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(base, "/")+path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the node at %s: %w", u.Host, errors.Unwrap(err))
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the answer of %s: %w", u.Host, err)
	}
	if res.StatusCode >= 300 {
		ae := &apiError{Status: res.StatusCode}
		if json.Unmarshal(b, ae) != nil || ae.Msg == "" {
			ae.Msg = strings.TrimSpace(string(b))
		}
		return ae
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], b...)
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the node's answer is not the expected JSON: %w", err)
	}
	return nil
}

func (e *env) fail(cmd string, err error) int {
	fmt.Fprintf(e.stderr, "orderly %s: %v\n", cmd, err)
	return ExitError
}

// printJSON writes raw JSON indented.
func (e *env) printJSON(raw json.RawMessage) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		e.stdout.Write(raw)
		return
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
