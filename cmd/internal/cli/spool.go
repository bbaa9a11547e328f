package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
	"github.com/orderlyhq/orderly/internal/spool"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

var spoolHelp = help{
	Usage: []string{
		"orderly spool status DIR [--json]",
		"orderly spool drain DIR [flags]",
	},
	Text: `A spool is a directory where a producer keeps the jobs the node (or
Redis) could not take: orderly enqueue --spool DIR, or the Go client's
client.Config.Spool (docs/contract.md §6.7).

status prints what waits in DIR: jobs, spooled calls, bytes, when the
oldest was spooled, and the jobs the node refused for good (kept in
DIR/rejected.seg). It reads the files and takes no lock, so it works while
a producer owns the spool.

drain sends what waits in DIR to the node at --http now, in the order it
was spooled, and exits 0 once nothing waits; it exits 1 if it cannot (the
node is still away: what was not sent stays in DIR), if another process
owns DIR (a producer running with it), or if the node refused jobs for
good (they are kept in DIR/rejected.seg).`,
	Examples: []string{
		"orderly spool status /var/spool/orderly",
		"orderly spool drain /var/spool/orderly --http 10.0.0.5:8080",
	},
}

// spoolCmd runs orderly spool status|drain DIR.
func spoolCmd(e *env, args []string) int {
	if len(args) == 0 {
		return e.report("spool", &usageError{msg: "missing command: status or drain (see orderly spool --help)"}, ExitUsage)
	}
	action := args[0]
	switch action {
	case "status", "drain":
	case "-h", "-help", "--help", "help":
		usage.Write(e.stdout, spoolHelp, nil)
		return ExitOK
	default:
		return e.report("spool", &usageError{msg: unknownCommand(action, []string{"status", "drain"}, "orderly spool --help")}, ExitUsage)
	}
	name := "spool " + action
	fs, c := e.flags(name, spoolHelp)
	rest, code, stop := e.parseArgs(fs, args[1:])
	if stop {
		return code
	}
	if len(rest) != 1 {
		return e.usage(fs, "give the spool's directory: orderly %s DIR", name)
	}
	dir := rest[0]
	if action == "status" {
		return e.spoolStatus(name, dir, c.json)
	}
	return e.spoolDrain(name, dir, c)
}

// spoolStatusJSON is orderly spool status's --json output.
type spoolStatusJSON struct {
	Dir      string   `json:"dir"`
	Jobs     int      `json:"jobs"`
	Records  int      `json:"records"`
	Bytes    int64    `json:"bytes"`
	Oldest   *float64 `json:"oldest"` // unix seconds; null when nothing waits
	Rejected int      `json:"rejected"`
}

func (e *env) spoolStatus(name, dir string, asJSON bool) int {
	st, err := spool.Inspect(dir, e.spoolLogger())
	if err != nil {
		return e.fail(name, err)
	}
	if asJSON {
		out := spoolStatusJSON{Dir: dir, Jobs: st.Jobs, Records: st.Records, Bytes: st.Bytes, Rejected: st.Rejected}
		if !st.Oldest.IsZero() {
			v := persistence.UnixSeconds(st.Oldest)
			out.Oldest = &v
		}
		b, _ := json.Marshal(out) // plain fields
		e.printJSON(b)
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "%s: %s waiting in %s, %d bytes\n", dir, plural(st.Jobs, "job"), plural(st.Records, "spooled call"), st.Bytes)
	if !st.Oldest.IsZero() {
		fmt.Fprintf(e.stdout, "oldest spooled %s ago (%s)\n", formatDuration(e.now().Sub(st.Oldest)), st.Oldest.UTC().Format(time.RFC3339))
	}
	if st.Rejected > 0 {
		fmt.Fprintf(e.stdout, "%s refused for good by the node, kept in %s/rejected.seg\n", plural(st.Rejected, "job"), dir)
	}
	return ExitOK
}

func (e *env) spoolDrain(name, dir string, c *conn) int {
	s, err := e.openSpool(dir, c)
	if err != nil {
		return e.fail(name, err)
	}
	defer s.sp.Close()
	res, err := s.sp.Drain(e.ctx, s.send, cliPermanent)
	left := s.sp.Stats()
	details := map[string]any{"sent": res.Sent, "rejected": res.Rejected, "waiting": left.Jobs}
	if err != nil {
		return e.reportWith(name, err, ExitError, details,
			fmt.Sprintf("%s sent; %s still wait in %s", plural(res.Sent, "job"), plural(left.Jobs, "job"), dir))
	}
	if res.Rejected > 0 {
		return e.reportWith(name, fmt.Errorf("the node refused %s for good; kept in %s/rejected.seg", plural(res.Rejected, "job"), dir),
			ExitError, details, fmt.Sprintf("%s sent", plural(res.Sent, "job")))
	}
	if c.json {
		b, _ := json.Marshal(details)
		e.printJSON(b)
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "sent %s from %s; nothing waits\n", plural(res.Sent, "job"), dir)
	return ExitOK
}

// spoolLogger logs the spool's warnings (a torn record dropped) to stderr.
func (e *env) spoolLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// spoolKeyRoom is what a job may grow by when the spool gives it a dedup
// key (`,"dedup_key":"spool:<16 hex>:<n>"`), which --file's batches leave
// room for so that a batch stays within one request.
const spoolKeyRoom = 64

// cliSpool is a spool the CLI owns (enqueue --spool, spool drain) and the
// node it sends to.
type cliSpool struct {
	e       *env
	c       *conn
	sp      *spool.Spool
	keyBase string
	keys    int
}

// openSpool opens the spool in dir for this process.
func (e *env) openSpool(dir string, c *conn) (*cliSpool, error) {
	sp, err := spool.Open(dir, spool.Options{Logger: e.spoolLogger()})
	if err != nil {
		return nil, err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	return &cliSpool{e: e, c: c, sp: sp, keyBase: "spool:" + hex.EncodeToString(rnd[:]) + ":"}, nil
}

// send posts spooled jobs to the node. It is the spool's Sender.
func (s *cliSpool) send(ctx context.Context, queue string, jobs []persistence.NewJob) error {
	body, err := apiBody(jobs)
	if err != nil {
		return err
	}
	var ans apiv1.Enqueued
	return s.c.callCtx(ctx, "POST", jobsPath(queue), body, &ans)
}

// apiBody is the enqueue request of jobs: their due times and expiries
// absolute, their payloads byte for byte.
func apiBody(jobs []persistence.NewJob) ([]byte, error) {
	b := []byte{'['}
	for i, j := range jobs {
		w := apiv1.NewJob{ID: j.ID, Payload: j.Payload, Score: j.Score, Headers: j.Headers, DedupKey: j.DedupKey, Priority: j.Priority}
		if !j.PerformAt.IsZero() {
			v := persistence.UnixSeconds(j.PerformAt)
			w.PerformAt = &v
		}
		if !j.ExpiresAt.IsZero() {
			v := persistence.UnixSeconds(j.ExpiresAt)
			w.ExpiresAt = &v
		}
		if w.Priority <= persistence.DefaultPriority {
			w.Priority = 0
		}
		jb, err := w.MarshalJSON()
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, jb...)
	}
	return append(b, ']'), nil
}

// cliPermanent reports whether the node refused jobs for good: a 4xx
// answer but 408 (a deadline) and 429 (too many requests).
func cliPermanent(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 &&
		ae.Status != http.StatusRequestTimeout && ae.Status != http.StatusTooManyRequests
}

// spooled is the outcome of an enqueue through the spool.
type spooled struct {
	ans apiv1.Enqueued // the node's answer, when it took the jobs
	// n counts the jobs spooled instead; cause is why (nil when a job of
	// the same id waited in the spool).
	n     int
	cause error
}

// enqueue sends jobs (an enqueue request's body) to the node, or keeps
// them in the spool: when an id of them waits there (so that they do not
// pass it), when the last attempt failed, or when the node cannot take
// them (unreachable, 5xx, 408, 429). A refusal for good (4xx) is an
// error, as without a spool. First it tries to send what waits, unless an
// attempt of this run failed.
func (s *cliSpool) enqueue(queue string, body []byte) (spooled, error) {
	jobs, err := apiv1.DecodeJobs(body, maxBodyBytes, s.e.now())
	if err != nil {
		return spooled{}, err
	}
	for i := range jobs {
		if jobs[i].DedupKey == "" {
			s.keys++
			jobs[i].DedupKey = s.keyBase + strconv.Itoa(s.keys)
		}
	}
	if st := s.sp.Stats(); st.Jobs > 0 && !st.Down {
		// A failure holds what follows, and no drain is tried again in
		// this run.
		_, _ = s.sp.Drain(s.e.ctx, s.send, cliPermanent)
	}
	now := s.e.now()
	held, err := s.sp.AppendIfHeld(queue, jobs, now)
	if err != nil {
		return spooled{}, err
	}
	if held {
		return spooled{n: len(jobs)}, nil
	}
	var out spooled
	body, err = apiBody(jobs)
	if err != nil {
		return spooled{}, err
	}
	// The request is not cut short by an interrupt: it completes, and its
	// outcome is known.
	err = s.c.callCtx(context.WithoutCancel(s.e.ctx), "POST", jobsPath(queue), body, &out.ans)
	if err == nil || cliPermanent(err) {
		return out, err
	}
	if serr := s.sp.Append(queue, jobs, now); serr != nil {
		return spooled{}, fmt.Errorf("%w; the spool could not keep the jobs either: %w", err, serr)
	}
	return spooled{n: len(jobs), cause: err}, nil
}

// say tells on stderr that jobs were spooled.
func (s *cliSpool) say(sp spooled) {
	why := "jobs of the same id wait in the spool, or the node was away a moment ago"
	if sp.cause != nil {
		why = "the node could not take them: " + sp.cause.Error()
	}
	fmt.Fprintf(s.e.stderr, "orderly enqueue: spooled %s in %s (%s); they are sent by the next orderly enqueue --spool %s or by orderly spool drain %s\n",
		plural(sp.n, "job"), s.sp.Dir(), why, s.sp.Dir(), s.sp.Dir())
}
