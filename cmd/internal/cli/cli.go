// Package cli implements the orderly command's subcommands, which talk to a
// running node over its HTTP API:
//
//	orderly enqueue --queue Q (--id ID [--payload P] ... | --file jobs.jsonl)
//	orderly stats [--queue Q]
//	orderly members
//	orderly morgue list|requeue|delete --queue Q ...
//	orderly bench [--redis URL] [--scenario lowkiq,...|all]
//
// Output is a table for people, or JSON with --json. Every subcommand takes
// --http (the node's HTTP address, env ORDERLY_HTTP) and --http-token (its
// bearer token, env ORDERLY_HTTP_TOKEN), and explains itself with --help.
//
// Exit codes: 0 success; 1 the operation failed: the node could not be
// reached or answered an error, or an input file is unreadable or holds a
// bad job (the same job the node would have refused); 2 bad usage: an
// unknown flag, a missing or malformed flag value (checked before anything
// is sent).
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// DefaultHTTP is the node address the subcommands talk to by default.
const DefaultHTTP = "127.0.0.1:8080"

// requestTimeout bounds one request to the node, answer included.
const requestTimeout = 30 * time.Second

// commands are the subcommands by name.
var commands = map[string]func(*env, []string) int{
	"bench":   benchCmd,
	"enqueue": enqueue,
	"members": members,
	"morgue":  morgue,
	"stats":   stats,
}

// IsCommand reports whether name is a subcommand.
func IsCommand(name string) bool {
	_, ok := commands[name]
	return ok
}

// env is what a subcommand works with: its streams, its environment and
// whether a person sits at the terminal. Run builds it from the process;
// tests build their own.
type env struct {
	// ctx is cancelled by the first SIGINT or SIGTERM. Long operations stop
	// at the next safe point (enqueue: after the batch in flight); a second
	// signal kills the process.
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	// stdinTTY reports that stdin is a terminal, so a confirmation can be
	// asked; stderrTTY that stderr is one, so progress can be drawn.
	stdinTTY, stderrTTY bool
	// client sends the requests; its timeout bounds each one.
	client *http.Client
}

// Run runs the subcommand named by args[0] and returns the exit code. It
// reads stdin when a subcommand needs it (enqueue --file -, a confirmation)
// and catches the first SIGINT or SIGTERM, which stops the subcommand at a
// safe point (an import finishes the batch in flight and says where to
// resume); a second one kills the process.
func Run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, stop catching them: a second one kills the
	// process as usual.
	defer context.AfterFunc(ctx, stop)()
	e := &env{
		ctx:       ctx,
		stdin:     os.Stdin,
		stdout:    stdout,
		stderr:    stderr,
		getenv:    getenv,
		now:       time.Now,
		stdinTTY:  isTerminal(os.Stdin),
		stderrTTY: isTerminal(stderr),
		client:    &http.Client{Timeout: requestTimeout},
	}
	return e.run(args)
}

// run dispatches args to their subcommand.
func (e *env) run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, "orderly: missing command (enqueue, stats, members, morgue or bench)")
		return ExitUsage
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "orderly: unknown command %q (enqueue, stats, members, morgue or bench)\n", args[0])
		return ExitUsage
	}
	return cmd(e, args[1:])
}

// isTerminal reports whether f is a character device, which is how a
// terminal looks without asking the terminal driver (golang.org/x/term is
// not a dependency). /dev/null is one too: a confirmation read from it
// meets end of file and is refused, progress drawn to it is lost.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	fi, err := file.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// help documents a subcommand for --help.
type help struct {
	// usage holds the synopsis lines, without "Usage: ".
	usage []string
	// text says what the subcommand does, in a paragraph or two.
	text string
	// examples are command lines, shown indented.
	examples []string
}

// conn holds the flags every subcommand shares: where the node is.
type conn struct {
	http   string
	token  string
	json   bool
	ctx    context.Context
	client *http.Client
}

// flags returns a flag set for the subcommand name with the shared flags,
// and the connection they fill.
func (e *env) flags(name string, h help) (*flag.FlagSet, *conn) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	c := &conn{ctx: e.ctx, client: e.client}
	def := DefaultHTTP
	if v := e.getenv("ORDERLY_HTTP"); v != "" {
		def = v
	}
	fs.StringVar(&c.http, "http", def, "address of a node's HTTP API, host:port or URL (env ORDERLY_HTTP)")
	fs.StringVar(&c.token, "http-token", e.getenv("ORDERLY_HTTP_TOKEN"), "bearer token of the HTTP API (env ORDERLY_HTTP_TOKEN)")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of a table")
	e.setUsage(fs, h)
	return fs, c
}

// setUsage makes fs's --help print h and the flags.
func (e *env) setUsage(fs *flag.FlagSet, h help) {
	fs.Usage = func() {
		w := e.stderr
		for i, u := range h.usage {
			if i == 0 {
				fmt.Fprintf(w, "Usage: %s\n", u)
			} else {
				fmt.Fprintf(w, "       %s\n", u)
			}
		}
		fmt.Fprintf(w, "\n%s\n", h.text)
		if len(h.examples) > 0 {
			fmt.Fprintf(w, "\nExamples:\n")
			for _, ex := range h.examples {
				fmt.Fprintf(w, "  %s\n", ex)
			}
		}
		fmt.Fprintf(w, "\nFlags:\n")
		fs.PrintDefaults()
	}
}

// parse parses flags and refuses positional arguments; it returns an exit
// code when the command must stop.
func (e *env) parse(fs *flag.FlagSet, args []string) (int, bool) {
	rest, code, stop := e.parseArgs(fs, args)
	if stop {
		return code, true
	}
	if len(rest) > 0 {
		return e.usage(fs, "unexpected argument %q", rest[0]), true
	}
	return 0, false
}

// parseArgs parses flags placed anywhere among the arguments (package flag
// stops at the first argument that is not a flag; this goes on after it)
// and returns the other arguments in order. After "--" everything is an
// argument, so that an id starting with '-' can be given.
func (e *env) parseArgs(fs *flag.FlagSet, args []string) (rest []string, code int, stop bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, ExitOK, true
			}
			return nil, ExitUsage, true
		}
		left := fs.Args()
		if len(left) == 0 {
			return rest, 0, false
		}
		if i := len(args) - len(left); i > 0 && args[i-1] == "--" {
			return append(rest, left...), 0, false // Parse stopped at "--"
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

// usage reports bad usage of fs's subcommand and returns ExitUsage.
func (e *env) usage(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "orderly %s: %s (see orderly %s --help)\n", fs.Name(), fmt.Sprintf(format, args...), fs.Name())
	return ExitUsage
}

// given returns the names of the flags set on the command line.
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// checkQueue checks the --queue flag locally: required, and a valid queue
// name, so that it is safe in a URL path.
func (e *env) checkQueue(fs *flag.FlagSet, queue string) (int, bool) {
	if queue == "" {
		return e.usage(fs, "--queue is required"), true
	}
	if err := persistence.ValidateQueueName(queue); err != nil {
		var fe *persistence.FieldError
		if errors.As(err, &fe) {
			return e.usage(fs, "--queue: %s", fe.Reason), true
		}
		return e.usage(fs, "--queue: %v", err), true
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

// errInterrupted is the error of a request cut short by a signal.
var errInterrupted = errors.New("interrupted")

// call sends a request to the node and decodes a JSON answer into out (a
// *json.RawMessage receives it as is). An answer of 300 or more is an
// *apiError. Requests use c.ctx; callers that must not be cut short pass
// their own context to callCtx.
func (c *conn) call(method, path string, body []byte, out any) error {
	return c.callCtx(c.ctx, method, path, body, out)
}

func (c *conn) callCtx(ctx context.Context, method, path string, body []byte, out any) error {
	base := c.http
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("--http %q is not an address (host:port or an http(s) URL)", c.http)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(base, "/")+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return errInterrupted
		}
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
			ae.Msg = printable(truncate(strings.TrimSpace(string(b)), 200))
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

// fail reports err of the subcommand cmd and returns ExitError.
func (e *env) fail(cmd string, err error) int {
	fmt.Fprintf(e.stderr, "orderly %s: %v\n", cmd, err)
	return ExitError
}

// printJSON writes raw JSON indented, otherwise as the node sent it: keys
// in their order, strings and numbers byte for byte.
func (e *env) printJSON(raw json.RawMessage) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		buf.Reset()
		buf.Write(raw)
	}
	out := bytes.TrimRight(buf.Bytes(), " \t\r\n")
	e.stdout.Write(append(out, '\n'))
}
