// Package cli implements the orderly command's subcommands, which talk to a
// running node over its HTTP API:
//
//	orderly enqueue --queue Q (--id ID [--payload JSON] ... | --file jobs.jsonl)
//	orderly stats [--queue Q]
//	orderly members
//	orderly morgue list|requeue|delete --queue Q ...
//	orderly jobs list|get|delete|perform-now|kill --queue Q ...
//	orderly processing Q
//	orderly queues [list|pause|resume|perform-all-now|kill-failed|delete-failed]
//	orderly periodic
//	orderly spool status|drain DIR
//	orderly bench [--redis URL] [--scenario lowkiq,...|all]
//	orderly store layout|downgrade --redis URL [--prefix P]
//	orderly version
//	orderly help [command]
//
// Output is a table for people, or JSON with --json; with --json, errors
// are JSON on stderr too ({"error": "...", "exit_code": 2, ...}). Every
// subcommand that talks to a node takes --http (the node's HTTP address,
// env ORDERLY_HTTP) and --http-token (its bearer token, env
// ORDERLY_HTTP_TOKEN), and explains itself with --help (on stdout, in the
// style of package usage). A mistyped command or flag is answered with the
// nearest one.
//
// Exit codes: 0 success; 1 the operation failed: the node could not be
// reached or answered an error, or an input file is unreadable or holds a
// bad job (the same job the node would have refused); 2 bad usage: an
// unknown command or flag, a missing or malformed flag value (checked
// before anything is sent).
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

	"golang.org/x/term"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
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

// command is a subcommand.
type command struct {
	name string
	// summary says what it does in one line, for orderly --help.
	summary string
	run     func(*env, []string) int
}

// commands are the subcommands, in the order orderly --help lists them.
// (The list is filled in init: help refers to it.)
var commands []command

func init() {
	commands = []command{
		{"enqueue", "enqueue a job given by flags, or the jobs of a JSONL file", enqueue},
		{"stats", "show every queue's metrics, or one queue's", stats},
		{"members", "list the cluster's members and the shards each holds", members},
		{"morgue", "list, requeue or delete the payloads whose retries ran out", morgue},
		{"jobs", "list queued jobs, look one up, delete it, run it now, kill or cancel it", jobs},
		{"processing", "list a queue's calls in flight, by shard", processing},
		{"queues", "list the queues, pause or resume one, or run a queue action", queues},
		{"node", "quiet or resume the node at --http", nodeCmd},
		{"periodic", "list the periodic jobs with their last and next tick", periodicCmd},
		{"state", "read or compare-and-set the state of an id of a stateful queue", state},
		{"spool", "show or send the jobs a producer kept in a spool directory (enqueue --spool)", spoolCmd},
		{"bench", "measure Orderly on this machine and audit what it did", benchCmd},
		{"check", "validate a node's configuration (file, environment, flags) and exit 0 or 1", checkCmd},
		{"store", "print a store's storage layout, or roll it back to layout 1 (talks to Redis)", storeCmd},
		{"version", "print orderly's version", versionCmd},
		{"help", "show this help, or a command's (orderly help enqueue)", helpCmd},
	}
}

// lookup returns the subcommand name.
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
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
	// environ is the process's environment, for the node's configuration
	// (check).
	environ []string
	now     func() time.Time
	// stdinTTY reports that stdin is a terminal, so a confirmation can be
	// asked; stderrTTY that stderr is one, so progress can be drawn.
	stdinTTY, stderrTTY bool
	// client sends the requests; its timeout bounds each one.
	client *http.Client
	// jsonErrors makes errors JSON objects on stderr (--json was given).
	jsonErrors bool
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
		environ:   os.Environ(),
		now:       time.Now,
		stdinTTY:  isTerminal(os.Stdin),
		stderrTTY: isTerminal(stderr),
		client:    &http.Client{Timeout: requestTimeout},
	}
	return e.run(args)
}

// run dispatches args to their subcommand.
func (e *env) run(args []string) int {
	e.jsonErrors = wantsJSON(args)
	if len(args) == 0 {
		return e.report("", &usageError{msg: "missing command (see orderly --help)"}, ExitUsage)
	}
	cmd, ok := lookup(args[0])
	if !ok {
		return e.report("", &usageError{msg: unknownCommand(args[0], commandNames(), "orderly --help")}, ExitUsage)
	}
	return cmd.run(e, args[1:])
}

// wantsJSON reports whether args ask for JSON output (--json before any
// "--"), so that even an error in parsing them is JSON.
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--json=true", "-json=true", "--json=1", "-json=1":
			return true
		}
	}
	return false
}

func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// unknownCommand is the message of a mistyped command, with the nearest
// one when there is one.
func unknownCommand(name string, known []string, helpCmd string) string {
	msg := fmt.Sprintf("unknown command %q", printable(truncate(name, 64)))
	if s := usage.Suggest(name, known); s != "" {
		msg += "; did you mean " + s + "?"
	}
	return msg + " (see " + helpCmd + ")"
}

// isTerminal reports whether f is a terminal (golang.org/x/term asks the
// terminal driver; /dev/null, a character device too, is not one).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// help documents a subcommand for --help.
type help = usage.Help

// conn holds the flags every subcommand shares: where the node is.
type conn struct {
	http   string
	token  string
	json   bool
	ctx    context.Context
	client *http.Client
}

// flagSet is a subcommand's flags, with the environment variable of each
// flag that has one, for the help.
type flagSet struct {
	*flag.FlagSet
	help help
	env  map[string]string
}

// newFlags returns an empty flag set for the subcommand name (as the
// messages name it: "morgue list").
func (e *env) newFlags(name string, h help) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports errors, and --help writes the help
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, help: h, env: map[string]string{}}
}

// flags returns a flag set for the subcommand name with the shared flags,
// and the connection they fill.
func (e *env) flags(name string, h help) (*flagSet, *conn) {
	fs := e.newFlags(name, h)
	c := &conn{ctx: e.ctx, client: e.client}
	def := DefaultHTTP
	if v := e.getenv("ORDERLY_HTTP"); v != "" {
		def = v
	}
	fs.StringVar(&c.http, "http", def, "address of a node's HTTP API, host:port or URL")
	fs.env["http"] = "ORDERLY_HTTP"
	fs.StringVar(&c.token, "http-token", e.getenv("ORDERLY_HTTP_TOKEN"), "bearer token of the HTTP API")
	fs.env["http-token"] = "ORDERLY_HTTP_TOKEN"
	fs.BoolVar(&c.json, "json", false, "print JSON instead of a table (errors too, on stderr)")
	return fs, c
}

// writeHelp writes the subcommand's help to stdout.
func (e *env) writeHelp(fs *flagSet) {
	flags := usage.FlagsOf(fs.FlagSet, fs.env)
	if tok := fs.Lookup("http-token"); tok != nil && tok.DefValue != "" {
		for i := range flags { // a token from the environment stays out of the help
			if flags[i].Name == "http-token" {
				flags[i].Default = ""
			}
		}
	}
	usage.Write(e.stdout, fs.help, flags)
}

// parse parses flags and refuses positional arguments; it returns an exit
// code when the command must stop.
func (e *env) parse(fs *flagSet, args []string) (int, bool) {
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
// argument, so that an id starting with '-' can be given. --help writes
// the help.
func (e *env) parseArgs(fs *flagSet, args []string) (rest []string, code int, stop bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				e.writeHelp(fs)
				return nil, ExitOK, true
			}
			return nil, e.usage(fs, "%v", usage.FlagError(fs.FlagSet, err)), true
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

// usageError is bad usage of a subcommand: an error that exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usage reports bad usage of fs's subcommand and returns ExitUsage.
func (e *env) usage(fs *flagSet, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...) + fmt.Sprintf(" (see orderly %s --help)", fs.Name())
	return e.report(fs.Name(), &usageError{msg: msg}, ExitUsage)
}

// fail reports err of the subcommand cmd and returns ExitError.
func (e *env) fail(cmd string, err error) int {
	return e.report(cmd, err, ExitError)
}

// errorJSON is an error on stderr with --json.
type errorJSON struct {
	// Error is the message, as it reads without --json after "orderly
	// <command>: ".
	Error string `json:"error"`
	// Command is the subcommand ("morgue list"); empty for the command
	// line as a whole.
	Command string `json:"command,omitempty"`
	// Field is the field the node named, Status its HTTP status, when the
	// node answered the error.
	Field  string `json:"field,omitempty"`
	Status int    `json:"status,omitempty"`
	// ExitCode is the command's exit code: 1 failed, 2 bad usage.
	ExitCode int `json:"exit_code"`
	// Extra holds what else a command reports with the error (enqueue
	// --file: how far it got).
	Extra map[string]any `json:"details,omitempty"`
}

// report writes err of the subcommand cmd to stderr, as a line or, with
// --json, as a JSON object, and returns code.
func (e *env) report(cmd string, err error, code int) int {
	return e.reportWith(cmd, err, code, nil)
}

// reportWith is report with details: further lines without --json (each
// after "orderly <cmd>: "), further members of "details" with it.
func (e *env) reportWith(cmd string, err error, code int, details map[string]any, lines ...string) int {
	prefix := "orderly"
	if cmd != "" {
		prefix += " " + cmd
	}
	if !e.jsonErrors {
		fmt.Fprintf(e.stderr, "%s: %v\n", prefix, err)
		for _, l := range lines {
			fmt.Fprintf(e.stderr, "%s: %s\n", prefix, l)
		}
		return code
	}
	ej := errorJSON{Error: err.Error(), Command: cmd, ExitCode: code, Extra: details}
	var ae *apiError
	if errors.As(err, &ae) {
		ej.Field, ej.Status = ae.Field, ae.Status
	}
	b, _ := json.Marshal(ej) // plain strings, numbers and maps of them
	fmt.Fprintf(e.stderr, "%s\n", b)
	return code
}

// given returns the names of the flags set on the command line.
func given(fs *flagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// checkQueue checks the --queue flag locally: required, and a valid queue
// name, so that it is safe in a URL path.
func (e *env) checkQueue(fs *flagSet, queue string) (int, bool) {
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

// apiError is an error answer of the API: its status, and its message and
// field (apiv1.Error).
type apiError struct {
	Status     int
	Msg, Field string
	// Hint says what to do about it, when the CLI knows.
	Hint string
}

func (e *apiError) Error() string {
	var s string
	if e.Field != "" {
		s = fmt.Sprintf("%s (field %s; HTTP %d)", e.Msg, e.Field, e.Status)
	} else {
		s = fmt.Sprintf("%s (HTTP %d)", e.Msg, e.Status)
	}
	if e.Hint != "" {
		s += ": " + e.Hint
	}
	return s
}

// tokenHint says how to give the node's token, after a 401 to a request
// that carried token (empty: none), as the dashboard does.
func tokenHint(token string) string {
	if token == "" {
		return "the node needs its token: pass --http-token or set ORDERLY_HTTP_TOKEN"
	}
	return "the node refused the token of --http-token (or ORDERLY_HTTP_TOKEN): give the one it was started with"
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
	if method == http.MethodPost && strings.HasSuffix(path, "/jobs") {
		// The node stores the jobs only before the CLI gives up on the
		// request, so that a request held up in a node is not applied
		// after a later one (docs/http-api.md, Enqueue deadlines).
		deadline := time.Now().Add(c.client.Timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		req.Header.Set(apiv1.DeadlineHeader, deadline.UTC().Format(time.RFC3339Nano))
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
		var body apiv1.Error
		if json.Unmarshal(b, &body) != nil || body.Error == "" {
			body = apiv1.Error{Error: printable(truncate(strings.TrimSpace(string(b)), 200))}
		}
		ae := &apiError{Status: res.StatusCode, Msg: body.Error, Field: body.Field}
		if res.StatusCode == http.StatusUnauthorized {
			ae.Hint = tokenHint(c.token)
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
