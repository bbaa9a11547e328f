package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// Enqueue limits.
const (
	// DefaultBatch is how many jobs of a file one request carries.
	DefaultBatch = 1000
	// MaxBatch is the largest --batch.
	MaxBatch = 100_000
	// maxBodyBytes is the most one request carries: the node's default
	// limit on a request body (web.DefaultMaxBodyBytes). Batches are cut
	// before they reach it; a line that alone would exceed it is refused.
	maxBodyBytes = 8 << 20
)

var enqueueHelp = help{
	Usage: []string{
		"orderly enqueue --queue Q --id ID [--payload JSON | --payload-raw S | --payload-base64 B] [--score S] [--perform-in D | --perform-at T] [--header K=V ...] [--dedup-key K] [--expires-in D | --expires-at T] [--priority N] [flags]",
		"orderly enqueue --queue Q --file jobs.jsonl|- [--batch N] [--skip N] [flags]",
		"orderly enqueue --spool DIR ... (either form)",
	},
	Text: `Enqueues one job given by flags, or the jobs of a JSONL file (--file, "-" for
stdin): one job object per line in the API's shape,
  {"id": "...", "payload": <any JSON> | "payload_base64": "...", "score": <number>,
   "perform_at": <unix seconds> | "perform_in": <seconds>, "headers": {"k": "v"},
   "dedup_key": "...", "expires_at": <unix seconds> | "expires_in": <seconds>, "priority": 1..4}
(only id is required; blank lines are skipped). The file's jobs are sent in
batches of --batch jobs (fewer when a batch would pass 8 MiB); a progress bar
is drawn on stderr when it is a terminal. Each line is checked before its
batch is sent; a bad line is reported as FILE:LINE and stops the import
before its batch is sent. Batches sent before it stay enqueued: the command
says how many, and --skip resumes after them. Each request is all or
nothing.

--payload must be JSON (42, true, {"sku":42}, '"a string"'), stored in
compact form; anything else is an error. --payload-raw stores its text as
it is, bytes and all, and --payload-base64 gives binary payloads. Without
a payload the job's payload is the JSON string "".

--perform-in takes a duration (90s, 1h30m) or seconds (90, 0.5);
--perform-at an RFC 3339 time (2024-05-01T12:00:00Z) or unix seconds.

--header K=V (repeatable) sets a header of the payload: string metadata
that travels with it to the handler (at most 32, 8 KiB in all).

--dedup-key K (at most 512 bytes): on a queue with a dedup_window, a job
whose id was enqueued with the same key within the window is acknowledged
as a duplicate and not stored; the command counts duplicates.

--expires-in (a duration or seconds, counted from now) or --expires-at (RFC
3339 or unix seconds): a payload not handed to a handler by then is
discarded when it is fetched, counted as expired, never delivered.

--priority N (1 to 4, default 1): among the due ids of a shard, priority 1
is fetched first, then 2, 3, 4; an id's payloads stay in score order.

--spool DIR keeps the jobs the node cannot take (unreachable, 5xx, 408,
429; not a 4xx refusal) in the spool directory DIR and says so on stderr:
the command then exits 0. It first sends what DIR holds, and jobs of an id
that waits there are spooled behind it, so each id keeps its order. Each
job without a dedup key is given one, so that on a queue with a
dedup_window a job sent twice is stored once. orderly spool status DIR
shows what waits; orderly spool drain DIR sends it (docs/contract.md §6.7).`,
	Examples: []string{
		`orderly enqueue --queue orders --id order-1 --payload '{"sku":42}' --perform-in 30s`,
		`orderly enqueue --queue orders --id order-1 --payload '{"sku":42}' --header tenant=acme`,
		`orderly enqueue --queue orders --id order-1 --payload '{"paid":true}' --dedup-key payment-7731`,
		`orderly enqueue --queue mail --id user-9 --payload '{"otp":"123456"}' --expires-in 5m`,
		`orderly enqueue --queue orders --file jobs.jsonl`,
		`orderly enqueue --queue orders --file jobs.jsonl --skip 20000   # resume after line 20000`,
		`produce-jobs | orderly enqueue --queue orders --file - --json`,
		`orderly enqueue --queue orders --id order-1 --payload '{"sku":42}' --spool /var/spool/orderly`,
	},
}

// enqueueOpts are the enqueue flags besides the connection's.
type enqueueOpts struct {
	queue, id, payload, payloadRaw, payloadBase64 string
	score                                         float64
	performIn, performAt, dedupKey                string
	expiresIn, expiresAt                          string
	file, spool                                   string
	batch, skip, priority                         int
	headers                                       headerFlag
}

// headerFlag collects repeated --header K=V flags.
type headerFlag map[string]string

func (h headerFlag) String() string { return "" }

func (h headerFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("%q: give K=V", v)
	}
	if _, dup := h[k]; dup {
		return fmt.Errorf("%q given more than once", k)
	}
	h[k] = val
	return nil
}

// enqueue enqueues one job from flags or the jobs of a JSONL file.
func enqueue(e *env, args []string) int {
	fs, c := e.flags("enqueue", enqueueHelp)
	var o enqueueOpts
	o.headers = headerFlag{}
	fs.StringVar(&o.queue, "queue", "", "queue to enqueue into (required)")
	fs.StringVar(&o.id, "id", "", "the job's id (one job from flags)")
	fs.StringVar(&o.payload, "payload", "", "the job's payload, a JSON value (anything else is an error)")
	fs.StringVar(&o.payloadRaw, "payload-raw", "", "the job's payload, stored as it is (text that is not JSON)")
	fs.StringVar(&o.payloadBase64, "payload-base64", "", "the job's payload as standard base64 (binary payloads)")
	fs.Float64Var(&o.score, "score", 0, "the payload's score (default now)")
	fs.StringVar(&o.performIn, "perform-in", "", "run the job after this `duration` (30s, 1h) or seconds (default now)")
	fs.StringVar(&o.performAt, "perform-at", "", "run the job at this `time`, RFC 3339 or unix seconds (default now)")
	fs.Var(o.headers, "header", "a header of the payload, `K=V` (repeatable)")
	fs.StringVar(&o.dedupKey, "dedup-key", "", "the job's dedup `key`: a duplicate within the queue's dedup_window is not stored")
	fs.StringVar(&o.expiresIn, "expires-in", "", "discard the payload if no handler got it within this `duration` (5m) or seconds")
	fs.StringVar(&o.expiresAt, "expires-at", "", "discard the payload if no handler got it by this `time`, RFC 3339 or unix seconds")
	fs.IntVar(&o.priority, "priority", 1, "the job's priority, `N` from 1 (first) to 4")
	fs.StringVar(&o.file, "file", "", `JSONL file of jobs, one object per line; "-" reads stdin`)
	fs.IntVar(&o.batch, "batch", DefaultBatch, "jobs per request with --file")
	fs.IntVar(&o.skip, "skip", 0, "skip the first `N` lines of --file (to resume an import)")
	fs.StringVar(&o.spool, "spool", "", "keep the jobs the node cannot take in the spool `DIR` (docs/contract.md §6.7)")
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	if code, stop := e.checkQueue(fs, o.queue); stop {
		return code
	}
	set := given(fs)
	if set["file"] {
		for _, f := range []string{"id", "payload", "payload-raw", "payload-base64", "score", "perform-in", "perform-at", "header", "dedup-key", "expires-in", "expires-at", "priority"} {
			if set[f] {
				return e.usage(fs, "--%s is for one job from flags; it does not go with --file", f)
			}
		}
		switch {
		case o.file == "":
			return e.usage(fs, `--file needs a path, or "-" for stdin`)
		case o.batch < 1 || o.batch > MaxBatch:
			return e.usage(fs, "--batch must be between 1 and %d, got %d", MaxBatch, o.batch)
		case o.skip < 0:
			return e.usage(fs, "--skip must not be negative, got %d", o.skip)
		}
		var sp *cliSpool
		if o.spool != "" {
			var err error
			if sp, err = e.openSpool(o.spool, c); err != nil {
				return e.fail("enqueue", err)
			}
			defer sp.sp.Close()
		}
		return e.enqueueFile(c, &o, sp)
	}
	for _, f := range []string{"batch", "skip"} {
		if set[f] {
			return e.usage(fs, "--%s goes with --file", f)
		}
	}
	if !set["id"] {
		return e.usage(fs, "give --id (one job) or --file (a JSONL file of jobs)")
	}
	body, err := jobFromFlags(&o, set, e.now())
	if err != nil {
		return e.usage(fs, "%v", err)
	}
	if o.spool != "" {
		return e.enqueueSpooled(c, &o, body)
	}
	var raw json.RawMessage
	if err := c.call("POST", jobsPath(o.queue), body, &raw); err != nil {
		return e.fail("enqueue", err)
	}
	if c.json {
		e.printJSON(raw)
		return ExitOK
	}
	var ans apiv1.Enqueued
	if err := json.Unmarshal(raw, &ans); err != nil {
		return e.fail("enqueue", fmt.Errorf("the node's answer is not the expected JSON: %w", err))
	}
	fmt.Fprintf(e.stdout, "enqueued %s into %s%s\n", plural(ans.Enqueued, "job"), o.queue, duplicates(ans.Duplicates))
	return ExitOK
}

// enqueueSpooled sends the one job of body through the spool of --spool.
func (e *env) enqueueSpooled(c *conn, o *enqueueOpts, body []byte) int {
	sp, err := e.openSpool(o.spool, c)
	if err != nil {
		return e.fail("enqueue", err)
	}
	defer sp.sp.Close()
	out, err := sp.enqueue(o.queue, body)
	if err != nil {
		return e.fail("enqueue", err)
	}
	if out.n > 0 {
		sp.say(out)
	}
	if c.json {
		b, _ := json.Marshal(map[string]any{"enqueued": out.ans.Enqueued, "duplicates": out.ans.Duplicates, "spooled": out.n})
		e.printJSON(b)
		return ExitOK
	}
	if out.n == 0 {
		fmt.Fprintf(e.stdout, "enqueued %s into %s%s\n", plural(out.ans.Enqueued, "job"), o.queue, duplicates(out.ans.Duplicates))
	}
	return ExitOK
}

// duplicates tells how many jobs were duplicates, "" for none.
func duplicates(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s: seen within the dedup window, not stored)", plural(n, "duplicate"))
}

// jobsPath is the enqueue endpoint of queue (a valid queue name).
func jobsPath(queue string) string {
	return "/api/v1/queues/" + url.PathEscape(queue) + "/jobs"
}

// jobFromFlags makes the body of a one-job enqueue request, checked as the
// node checks a job (but for its payload limit); its errors name the flag
// at fault. now is the time --perform-in counts from.
func jobFromFlags(o *enqueueOpts, set map[string]bool, now time.Time) ([]byte, error) {
	job := apiv1.NewJob{ID: o.id}
	payloadFlag := ""
	for _, f := range []string{"payload", "payload-raw", "payload-base64"} {
		if !set[f] {
			continue
		}
		if payloadFlag != "" {
			return nil, errors.New("give one of --payload, --payload-raw and --payload-base64")
		}
		payloadFlag = f
	}
	switch payloadFlag {
	case "payload":
		p := []byte(o.payload)
		if err := json.Unmarshal(p, new(json.RawMessage)); err != nil {
			return nil, fmt.Errorf("--payload: not valid JSON (%v); quote a string as JSON (--payload '\"text\"'), or give --payload-raw to store the text as it is", err)
		}
		var buf bytes.Buffer
		_ = json.Compact(&buf, p) // valid JSON compacts
		job.Payload = buf.Bytes()
	case "payload-raw":
		job.Payload = []byte(o.payloadRaw)
	case "payload-base64":
		data, err := base64.StdEncoding.DecodeString(o.payloadBase64)
		if err != nil {
			return nil, fmt.Errorf("--payload-base64 is not valid standard base64: %w", err)
		}
		job.Payload = data
	}
	if set["score"] {
		job.Score = &o.score
	}
	if len(o.headers) > 0 {
		job.Headers = o.headers
	}
	job.DedupKey = o.dedupKey
	if set["priority"] {
		if o.priority < 1 || o.priority > persistence.MaxPriority {
			return nil, fmt.Errorf("--priority: must be an integer from 1 to %d, got %d", persistence.MaxPriority, o.priority)
		}
		if o.priority > persistence.DefaultPriority {
			job.Priority = o.priority
		}
	}
	if set["perform-in"] && set["perform-at"] {
		return nil, errors.New("give --perform-in or --perform-at, not both")
	}
	if set["perform-in"] {
		sec, err := parsePerformIn(o.performIn)
		if err != nil {
			return nil, fmt.Errorf("--perform-in: %w", err)
		}
		job.PerformIn = &sec
	}
	if set["perform-at"] {
		sec, err := parsePerformAt(o.performAt)
		if err != nil {
			return nil, fmt.Errorf("--perform-at: %w", err)
		}
		job.PerformAt = &sec
	}
	if err := expiryFromFlags(o, set, &job); err != nil {
		return nil, err
	}
	// The node's rules: the due time, the id, finite numbers.
	stored, err := job.Store(now, -1)
	if err == nil {
		err = persistence.ValidateJobs([]persistence.NewJob{stored}, maxBodyBytes)
	}
	if fe := (*persistence.FieldError)(nil); errors.As(err, &fe) {
		flag := strings.ReplaceAll(fe.Field, "_", "-")
		switch fe.Field {
		case "payload":
			flag = payloadFlag
		case "headers":
			flag = "header"
		}
		return nil, fmt.Errorf("--%s: %s", flag, fe.Reason)
	}
	if err != nil {
		return nil, err
	}
	b, err := job.MarshalJSON() // not json.Marshal, which would escape HTML in the payload
	if err != nil {
		return nil, err
	}
	return append(append([]byte{'['}, b...), ']'), nil
}

// expiryFromFlags sets job's expires_in or expires_at from --expires-in
// or --expires-at (docs/contract.md §3.15).
func expiryFromFlags(o *enqueueOpts, set map[string]bool, job *apiv1.NewJob) error {
	if set["expires-in"] && set["expires-at"] {
		return errors.New("give --expires-in or --expires-at, not both")
	}
	if set["expires-in"] {
		sec, err := parsePerformIn(o.expiresIn)
		if err != nil {
			return fmt.Errorf("--expires-in: %w", err)
		}
		job.ExpiresIn = &sec
	}
	if set["expires-at"] {
		sec, err := parsePerformAt(o.expiresAt)
		if err != nil {
			return fmt.Errorf("--expires-at: %w", err)
		}
		job.ExpiresAt = &sec
	}
	return nil
}

// parsePerformIn reads a delay: a Go duration (90s, 1h30m) or seconds.
// The node's rules (persistence.PerformAt) check its range.
func parsePerformIn(v string) (float64, error) {
	sec, err := strconv.ParseFloat(v, 64)
	if err != nil {
		d, derr := time.ParseDuration(v)
		if derr != nil {
			return 0, fmt.Errorf("%q is neither a duration (30s, 1h30m) nor seconds", v)
		}
		sec = d.Seconds()
	}
	return sec, nil
}

// parsePerformAt reads a time: RFC 3339 or unix seconds. The node's rules
// (persistence.PerformAt) check its range.
func parsePerformAt(v string) (float64, error) {
	sec, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t, terr := time.Parse(time.RFC3339Nano, v)
		if terr != nil {
			return 0, fmt.Errorf("%q is neither an RFC 3339 time (2024-05-01T12:00:00Z) nor unix seconds", v)
		}
		sec = persistence.UnixSeconds(t)
	}
	return sec, nil
}

// plural renders "1 job", "2 jobs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// importer sends the jobs of a JSONL file in batches and keeps the count
// the user needs to resume after a failure.
type importer struct {
	e     *env
	c     *conn
	queue string
	name  string // the input as messages name it: its path, or "stdin"
	first int    // the first line this run reads (--skip + 1)
	// done is the last line of the last batch the node confirmed (--skip
	// before the first); enqueued counts the jobs of those batches.
	done, enqueued int
	// duplicates counts the jobs of those batches that were duplicates.
	duplicates int
	// spool is --spool's (nil without it); spooled counts the jobs kept
	// in it, cause says why the first were.
	spool   *cliSpool
	spooled int
	cause   error
	// batch holds the checked jobs not yet sent, lines their line numbers
	// and size their bytes.
	batch [][]byte
	lines []int
	size  int
	prog  *progress
}

// jobFieldIndex finds the job an API error names ("jobs[3].id").
var jobFieldIndex = regexp.MustCompile(`^jobs\[(\d+)\]`)

// enqueueFile enqueues the jobs of o.file.
func (e *env) enqueueFile(c *conn, o *enqueueOpts, sp *cliSpool) int {
	in, name, total, closeIn, err := e.openInput(o.file)
	if err != nil {
		return e.fail("enqueue", err)
	}
	defer closeIn()
	start := e.now()
	im := &importer{e: e, c: c, queue: o.queue, name: name, first: o.skip + 1, done: o.skip, spool: sp}
	if e.stderrTTY {
		im.prog = &progress{w: e.stderr, now: e.now, start: start, total: total}
	}
	pad := 0 // bytes a job may grow by before it is sent
	if sp != nil {
		pad = spoolKeyRoom
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxBodyBytes)
	var (
		n    int   // lines read
		read int64 // bytes read, for progress
	)
	for sc.Scan() {
		n++
		line := sc.Bytes()
		read += int64(len(line)) + 1
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF")) // a UTF-8 byte order mark
		}
		if n <= o.skip || len(trimJSONSpace(line)) == 0 {
			continue
		}
		job, err := parseJobLine(line, e.now())
		if err == nil && len(job)+2 > maxBodyBytes {
			err = fmt.Errorf("the job is %d bytes, more than one request may carry (%d)", len(job), maxBodyBytes)
		}
		if err != nil {
			return im.stop(fmt.Errorf("%s:%d: %w", name, n, err), false)
		}
		if len(im.batch) == o.batch || im.size+len(job)+pad+len(im.batch)+2 > maxBodyBytes {
			if code, stop := im.send(); stop {
				return code
			}
			im.prog.update(im.enqueued, read)
		}
		im.batch = append(im.batch, bytes.Clone(job))
		im.lines = append(im.lines, n)
		im.size += len(job) + pad
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("%s:%d: line longer than %d bytes, more than one request may carry", name, n+1, maxBodyBytes)
		} else {
			err = fmt.Errorf("reading %s after line %d: %w", name, n, err)
		}
		return im.stop(err, false)
	}
	if len(im.batch) > 0 {
		if code, stop := im.send(); stop {
			return code
		}
	}
	im.prog.clear()
	elapsed := e.now().Sub(start)
	if im.spooled > 0 {
		im.spool.say(spooled{n: im.spooled, cause: im.cause})
	}
	if c.json {
		out, _ := json.Marshal(map[string]any{"enqueued": im.enqueued, "duplicates": im.duplicates, "spooled": im.spooled, "queue": o.queue, "lines": n, "seconds": elapsed.Seconds()})
		e.printJSON(out)
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "enqueued %s into %s in %s (%d jobs/s)%s\n", plural(im.enqueued, "job"), o.queue, formatDuration(elapsed), rate(im.enqueued, elapsed), duplicates(im.duplicates))
	return ExitOK
}

// openInput opens the JSONL input: a path, or "-" for stdin. total is its
// size when it is a regular file (for the progress bar), else 0.
func (e *env) openInput(path string) (r io.Reader, name string, total int64, closeFn func(), err error) {
	size := func(f *os.File) int64 {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
		return 0
	}
	if path == "-" {
		if e.stdinTTY {
			fmt.Fprintln(e.stderr, "orderly enqueue: reading jobs from the terminal, one JSON object a line; end with Ctrl-D")
		}
		if f, ok := e.stdin.(*os.File); ok {
			total = size(f)
		}
		return e.stdin, "stdin", total, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", 0, nil, err
	}
	return f, path, size(f), func() { f.Close() }, nil
}

// send sends the pending batch. On failure it reports and returns the exit
// code with stop set; after an interrupt it stops once the batch is in.
func (im *importer) send() (int, bool) {
	if im.e.ctx.Err() != nil {
		return im.stop(errInterrupted, false), true
	}
	body := joinJobs(im.batch, im.size)
	var ans apiv1.Enqueued
	var err error
	if im.spool != nil {
		var out spooled
		out, err = im.spool.enqueue(im.queue, body)
		ans = out.ans
		im.spooled += out.n
		if im.cause == nil {
			im.cause = out.cause
		}
	} else {
		// The batch in flight is not cut short by an interrupt: it
		// completes, and the count stays exact.
		err = im.c.callCtx(context.WithoutCancel(im.e.ctx), "POST", jobsPath(im.queue), body, &ans)
	}
	if err != nil {
		return im.stop(im.explain(err), uncertain(err)), true
	}
	im.enqueued += ans.Enqueued
	im.duplicates += ans.Duplicates
	im.done = im.lines[len(im.lines)-1]
	im.batch, im.lines, im.size = im.batch[:0], im.lines[:0], 0
	if im.e.ctx.Err() != nil {
		return im.stop(errInterrupted, false), true
	}
	return 0, false
}

// explain prefixes an API error that names a job of the batch
// ("jobs[3].id") with that job's line.
func (im *importer) explain(err error) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	if m := jobFieldIndex.FindStringSubmatch(ae.Field); m != nil {
		if i, perr := strconv.Atoi(m[1]); perr == nil && i < len(im.lines) {
			return fmt.Errorf("%s:%d: %w", im.name, im.lines[i], err)
		}
	}
	return err
}

// uncertain reports whether a failed request may have enqueued part of its
// batch: the node failed (5xx) or the answer was lost. A 4xx answer, or a
// connection refused, means nothing was written.
func uncertain(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status >= 500
	}
	return !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, errInterrupted)
}

// stop reports err and what was enqueued before it, and returns ExitError.
// maybe says that the failed batch may be partly enqueued. With --json the
// report is one JSON object whose details say how far the import got:
// enqueued, the lines they came from (first_line to last_line), the --skip
// that resumes (resume_skip, 0 when nothing is confirmed) and, when maybe,
// the lines that may be partly in (uncertain_lines).
func (im *importer) stop(err error, maybe bool) int {
	im.prog.clear()
	var what string
	switch {
	case im.enqueued > 0:
		what = fmt.Sprintf("%s enqueued (lines %d to %d)", plural(im.enqueued, "job"), im.first, im.done)
	case im.first > 1:
		what = "no job enqueued by this run"
	default:
		what = "no job enqueued"
	}
	next := im.done + 1
	details := map[string]any{"enqueued": im.enqueued, "first_line": im.first, "last_line": im.done, "resume_skip": im.done}
	var lines []string
	if maybe && len(im.lines) > 0 {
		last := im.lines[len(im.lines)-1]
		details["uncertain_lines"] = []int{next, last}
		lines = append(lines, fmt.Sprintf("%s; the batch of lines %d to %d may be partly enqueued (the node did not confirm it); nothing after line %d was sent", what, next, last, last))
	} else {
		lines = append(lines, fmt.Sprintf("%s; nothing from line %d on was sent", what, next))
	}
	if im.done > 0 {
		hint := ""
		if maybe {
			hint = " (jobs re-sent merge with those that got in: equal payloads are kept once)"
		}
		lines = append(lines, fmt.Sprintf("to resume, rerun with --skip %d%s", im.done, hint))
	}
	return im.e.reportWith("enqueue", err, ExitError, details, lines...)
}

// rate is n per second over d, as a whole number.
func rate(n int, d time.Duration) int {
	return int(float64(n) / max(d, time.Millisecond).Seconds())
}
