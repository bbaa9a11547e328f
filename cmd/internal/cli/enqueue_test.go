package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// writeFile writes content to a file in a fresh temporary directory and
// returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// lines makes a JSONL file's content of jobs "<prefix><i>" for i in
// [from, to], payload {"n": i}.
func lines(prefix string, from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, `{"id": "%s%d", "payload": {"n": %d}}`+"\n", prefix, i, i)
	}
	return b.String()
}

func TestEnqueueFromFlags(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	for _, tc := range []struct {
		name      string
		args      []string
		payload   string  // stored bytes
		score     float64 // 0: now (t0)
		performAt time.Time
	}{
		{"json object is stored compact", []string{"--payload", `{"sku": 42, "tags": ["a", "b"]}`}, `{"sku":42,"tags":["a","b"]}`, 0, t0},
		{"raw text is stored as it is", []string{"--payload-raw", "hello world"}, `hello world`, 0, t0},
		{"raw JSON is stored as it is", []string{"--payload-raw", `{"a": 1}`}, `{"a": 1}`, 0, t0},
		{"a number is JSON", []string{"--payload", "42"}, `42`, 0, t0},
		{"a quoted string", []string{"--payload", `"42"`}, `"42"`, 0, t0},
		{"html characters kept", []string{"--payload", `"<a href=\"x\">&</a>"`}, `"<a href=\"x\">&</a>"`, 0, t0},
		{"html characters kept raw", []string{"--payload-raw", `<a href="x">&</a>`}, `<a href="x">&</a>`, 0, t0},
		{"no payload is the empty string", nil, `""`, 0, t0},
		{"empty raw payload is empty", []string{"--payload-raw", ""}, "", 0, t0},
		{"base64", []string{"--payload-base64", "AP8="}, "\x00\xff", 0, t0},
		{"score", []string{"--payload", `"x"`, "--score", "5.25"}, `"x"`, 5.25, t0},
		{"perform-in duration", []string{"--perform-in", "1m30s"}, `""`, 0, t0.Add(90 * time.Second)},
		{"perform-in seconds", []string{"--perform-in", "1.5"}, `""`, 0, t0.Add(1500 * time.Millisecond)},
		{"perform-at RFC 3339", []string{"--perform-at", "2023-11-14T22:15:00Z"}, `""`, 0, t0.Add(100 * time.Second)},
		{"perform-at unix seconds", []string{"--perform-at", "1700000100.5"}, `""`, 0, t0.Add(100500 * time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "job " + tc.name
			args := append([]string{"enqueue", "--queue", "mail", "--id", id}, tc.args...)
			out := n.run(args...).ok(t)
			require.Equal(t, "enqueued 1 job into mail\n", out)
			j := n.job("mail", id)
			require.NotNil(t, j)
			require.Len(t, j.Payloads, 1)
			require.Equal(t, tc.payload, string(j.Payloads[0].Data))
			if tc.score != 0 {
				require.Equal(t, tc.score, j.Payloads[0].Score)
			} else {
				// Default scores are now, made strictly increasing per shard.
				require.InDelta(t, persistence.UnixSeconds(t0), j.Payloads[0].Score, 1e-3)
			}
			require.True(t, tc.performAt.Equal(j.PerformAt), "perform_at %s, want %s", j.PerformAt, tc.performAt)
		})
	}

	// Flags after the id, the ID with '/', '%' and unicode, and --json.
	out := n.run("enqueue", "--id", "a/b%c ünï", "--queue", "orders", "--json", "--payload", "{}").ok(t)
	require.JSONEq(t, `{"enqueued": 1, "duplicates": 0}`, out)
	require.NotNil(t, n.job("orders", "a/b%c ünï"))
}

func TestEnqueueUsage(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--id", "a"}, "--queue is required"},
		{[]string{"--queue", "a/b", "--id", "a"}, "--queue: \"a/b\": only letters"},
		{[]string{"--queue", "orders"}, "give --id (one job) or --file"},
		{[]string{"--queue", "orders", "--id", ""}, "--id: must not be empty"},
		{[]string{"--queue", "orders", "--id", strings.Repeat("x", 513)}, "--id: longer than 512 bytes"},
		{[]string{"--queue", "orders", "--id", "a\xffb"}, "--id: not valid UTF-8"},
		{[]string{"--queue", "orders", "--id", "a", "--payload", "1", "--payload-base64", "AA=="}, "give one of --payload, --payload-raw and --payload-base64"},
		{[]string{"--queue", "orders", "--id", "a", "--payload", "1", "--payload-raw", "x"}, "give one of --payload, --payload-raw and --payload-base64"},
		{[]string{"--queue", "orders", "--id", "a", "--payload", "\xff"}, "--payload: not valid JSON"},
		// Text that is not JSON is an error, not silently a JSON string.
		{[]string{"--queue", "orders", "--id", "a", "--payload", "hello"}, `--payload: not valid JSON (invalid character 'h' looking for beginning of value); quote a string as JSON (--payload '"text"'), or give --payload-raw to store the text as it is`},
		{[]string{"--queue", "orders", "--id", "a", "--payload", ""}, "--payload: not valid JSON"},
		{[]string{"--queue", "orders", "--id", "a", "--payload-base64", "!!"}, "--payload-base64 is not valid standard base64"},
		{[]string{"--queue", "orders", "--id", "a", "--score", "NaN"}, "--score: must be a finite number"},
		{[]string{"--queue", "orders", "--id", "a", "--score", "Inf"}, "--score: must be a finite number"},
		{[]string{"--queue", "orders", "--id", "a", "--score", "abc"}, `invalid value "abc" for flag --score`},
		{[]string{"--queue", "orders", "--id", "a", "--scroe", "1"}, "unknown flag --scroe; did you mean --score?"},
		{[]string{"--queue", "orders", "--id", "a", "--perform-in", "1s", "--perform-at", "1"}, "give --perform-in or --perform-at, not both"},
		{[]string{"--queue", "orders", "--id", "a", "--perform-in", "soon"}, `--perform-in: "soon" is neither a duration`},
		{[]string{"--queue", "orders", "--id", "a", "--perform-in", "-5s"}, "--perform-in: must not be negative"},
		{[]string{"--queue", "orders", "--id", "a", "--perform-in", "1e300"}, "--perform-in: out of range: the time would be after unix second 17179869184"},
		{[]string{"--queue", "orders", "--id", "a", "--perform-at", "tomorrow"}, `--perform-at: "tomorrow" is neither an RFC 3339 time`},
		{[]string{"--queue", "orders", "--id", "a", "--perform-at", "-1"}, "--perform-at: out of range: must be unix seconds between 0 and 17179869184"},
		{[]string{"--queue", "orders", "--id", "a", "--batch", "10"}, "--batch goes with --file"},
		{[]string{"--queue", "orders", "--id", "a", "--skip", "1"}, "--skip goes with --file"},
		{[]string{"--queue", "orders", "--file", "x", "--id", "a"}, "--id is for one job from flags; it does not go with --file"},
		{[]string{"--queue", "orders", "--file", "x", "--payload", "a"}, "--payload is for one job from flags"},
		{[]string{"--queue", "orders", "--file", ""}, `--file needs a path`},
		{[]string{"--queue", "orders", "--file", "x", "--batch", "0"}, "--batch must be between 1 and 100000"},
		{[]string{"--queue", "orders", "--file", "x", "--skip", "-1"}, "--skip must not be negative"},
		{[]string{"--queue", "orders", "--id", "a", "--nope"}, "unknown flag --nope"},
		{[]string{"--queue", "orders", "--id", "a", "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := n.run(append([]string{"enqueue"}, tc.args...)...)
			require.Equal(t, ExitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, tc.msg)
			require.Empty(t, r.stdout)
		})
	}
	require.Zero(t, n.enqueues.Load(), "bad usage sends nothing")
}

func TestEnqueueFile(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	// 5,000 jobs of every shape: JSON payloads with insignificant
	// whitespace, strings, binary, no payload; scores and times.
	var b strings.Builder
	want := map[string]string{}
	for i := range 5000 {
		id := fmt.Sprintf("job-%04d", i)
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, `{"id": %q, "payload": {"n": %d, "s": "a b"}}`, id, i)
			want[id] = fmt.Sprintf(`{"n":%d,"s":"a b"}`, i)
		case 1:
			fmt.Fprintf(&b, `  {"payload": "p%d", "id": %q, "score": %d}  `, i, id, i)
			want[id] = fmt.Sprintf(`"p%d"`, i)
		case 2:
			fmt.Fprintf(&b, `{"id": %q, "payload_base64": "AP8A/w==", "perform_in": 60}`, id)
			want[id] = "\x00\xff\x00\xff"
		case 3:
			fmt.Fprintf(&b, `{"id": %q, "perform_at": 1700000000}`+"\r", id) // CRLF
			want[id] = `""`
		case 4:
			fmt.Fprintf(&b, `{"id": %q, "payload": [1, 2, {"a": null}]}`, id)
			want[id] = `[1,2,{"a":null}]`
		}
		b.WriteString("\n")
		if i%1000 == 999 {
			b.WriteString("\n   \n") // blank lines are skipped
		}
	}
	path := writeFile(t, "jobs.jsonl", b.String())

	out := n.run("enqueue", "--queue", "orders", "--file", path, "--batch", "1200").ok(t)
	require.Regexp(t, `^enqueued 5000 jobs into orders in [0-9.]+(ms|s) \(\d+ jobs/s\)\n$`, out)
	require.EqualValues(t, 5, n.enqueues.Load(), "5,000 jobs in batches of 1,200")

	got := n.queued("orders")
	require.Len(t, got, 5000)
	for id, payload := range want {
		j, ok := got[id]
		require.True(t, ok, id)
		require.Len(t, j.Payloads, 1, id)
		require.Equal(t, payload, string(j.Payloads[0].Data), id)
	}
	require.Equal(t, 1.0, got["job-0001"].Payloads[0].Score)
	require.True(t, got["job-0002"].PerformAt.Equal(t0.Add(time.Minute)))

	// --json: a summary for scripts.
	out = n.run("enqueue", "--queue", "mail", "--file", writeFile(t, "two.jsonl", lines("m", 1, 2)), "--json").ok(t)
	require.Regexp(t, `"enqueued": 2`, out)
	require.Regexp(t, `"lines": 2`, out)
	require.Regexp(t, `"queue": "mail"`, out)
	require.Regexp(t, `"seconds": [0-9.e-]+`, out)

	// An empty file enqueues nothing, successfully.
	out = n.run("enqueue", "--queue", "mail", "--file", writeFile(t, "empty.jsonl", "")).ok(t)
	require.Regexp(t, `^enqueued 0 jobs into mail in `, out)

	// A byte order mark at the start of the file is skipped.
	n.run("enqueue", "--queue", "mail", "--file", writeFile(t, "bom.jsonl", "\xEF\xBB\xBF"+`{"id": "bom"}`)).ok(t)
	require.NotNil(t, n.job("mail", "bom"))
}

func TestEnqueueFileBadLines(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	// Batches of 10: lines 1 to 20 go out in two requests; line 27 is bad,
	// so the batch of lines 21 to 27 is never sent.
	content := lines("a", 1, 25) + "\n" + `{"payload": "no id"}` + "\n" + lines("b", 1, 5)
	path := writeFile(t, "jobs.jsonl", content)
	r := n.run("enqueue", "--queue", "orders", "--file", path, "--batch", "10")
	require.Equal(t, ExitError, r.code)
	require.Empty(t, r.stdout)
	require.Equal(t, "orderly enqueue: "+path+":27: id: required\n"+
		"orderly enqueue: 20 jobs enqueued (lines 1 to 20); nothing from line 21 on was sent\n"+
		"orderly enqueue: to resume, rerun with --skip 20\n", r.stderr)
	require.Len(t, n.queued("orders"), 20)
	require.EqualValues(t, 2, n.enqueues.Load())

	// Fix the line and resume: the rest goes in, nothing twice.
	fixed := strings.Replace(content, `{"payload": "no id"}`, `{"id": "fixed"}`, 1)
	require.NoError(t, os.WriteFile(path, []byte(fixed), 0o600))
	out := n.run("enqueue", "--queue", "orders", "--file", path, "--batch", "10", "--skip", "20").ok(t)
	require.Regexp(t, `^enqueued 11 jobs into orders`, out)
	got := n.queued("orders")
	require.Len(t, got, 31)
	require.Len(t, got["a1"].Payloads, 1)

	// A bad line in the first batch: nothing is sent.
	before := n.enqueues.Load()
	bad := writeFile(t, "bad.jsonl", lines("c", 1, 3)+"[1]\n")
	r = n.run("enqueue", "--queue", "orders", "--file", bad)
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly enqueue: "+bad+":4: must be a JSON object, got an array (one job per line)\n"+
		"orderly enqueue: no job enqueued; nothing from line 1 on was sent\n", r.stderr)
	require.Equal(t, before, n.enqueues.Load())
	require.Nil(t, n.job("orders", "c1"))

	// With --skip, the count and the hint start after the skipped lines.
	r = n.run("enqueue", "--queue", "orders", "--file", writeFile(t, "skip.jsonl", lines("d", 1, 6)+"{\n"), "--skip", "2", "--batch", "2")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "skip.jsonl:7: malformed JSON at byte 1: unexpected end of JSON input\n")
	require.Contains(t, r.stderr, "orderly enqueue: 2 jobs enqueued (lines 3 to 4); nothing from line 5 on was sent\n")
	require.Contains(t, r.stderr, "rerun with --skip 4\n")
}

func TestParseJobLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		err  string // "" when the line is good
	}{
		{`{"id": "a"}`, ""},
		{` {"id":"a","payload":null} `, ""},
		{`{"id": "\u00e9\ud83d\ude00", "payload_base64": "", "score": -1.5e3, "perform_in": 0}`, ""},
		{`{"id": "a", "perform_at": 0, "payload": {"id": 1, "id": 2}}`, ""},
		{`{"\u0069d": "escaped key"}`, ""},
		{``, "malformed JSON: empty"},
		{`{"id": "a"`, "malformed JSON at byte 10: unexpected end of JSON input"},
		{`   {"id": "a",}`, "malformed JSON at byte 15: invalid character '}' looking for beginning of object key string"},
		{`{"id": "a"} {"id": "b"}`, "malformed JSON at byte 13: invalid character '{' after top-level value"},
		{"\x00\x01\xff", `malformed JSON at byte 1: invalid character '\x00' looking for beginning of value`},
		{`"a"`, "must be a JSON object, got a string (one job per line)"},
		{`null`, "must be a JSON object, got null (one job per line)"},
		{`{}`, "id: required"},
		{`{"id": ""}`, "id: must not be empty"},
		{`{"id": 7}`, "id: must be a string, got a number"},
		{`{"id": null}`, "id: must be a string, got null"},
		{"{\"id\": \"a\xffb\"}", "id: not valid UTF-8 (invalid bytes or an unpaired surrogate escape)"},
		{`{"id": "a\ud800b"}`, "id: not valid UTF-8 (invalid bytes or an unpaired surrogate escape)"},
		{`{"id": "a\udc00"}`, "id: not valid UTF-8 (invalid bytes or an unpaired surrogate escape)"},
		{`{"id": "` + strings.Repeat("é", 257) + `"}`, "id: longer than 512 bytes (514)"},
		{`{"id": "a", "id": "b"}`, "id: given more than once"},
		{`{"id": "a", "\u0069d": "b"}`, "id: given more than once"},
		{`{"id": "a", "ID": "b"}`, "ID: unknown field (known: id, payload, payload_base64, score, perform_at, perform_in, headers, dedup_key, expires_at, expires_in, priority)"},
		{`{"id": "a", "\u001b[31m\n": 1}`, `\x1b[31m\n: unknown field`},
		{"{\"id\": \"a\", \"\x1b\": 1}", `malformed JSON at byte 14: invalid character '\x1b' in string literal`},
		{`{"id": "a", "payload": 1, "payload_base64": "AA=="}`, "payload_base64: give payload or payload_base64, not both"},
		{`{"id": "a", "payload_base64": "AA="}`, "payload_base64: not valid standard base64: illegal base64 data at input byte 3"},
		{`{"id": "a", "payload_base64": 1}`, "payload_base64: must be a string, got a number"},
		{`{"id": "a", "score": "1"}`, "score: must be a number, got a string"},
		{`{"id": "a", "score": 1e400}`, "score: must be a finite number (1e400 does not fit a float64)"},
		{`{"id": "a", "score": null}`, "score: must be a number, got null"},
		{`{"id": "a", "perform_at": -1}`, "perform_at: out of range: must be unix seconds between 0 and 17179869184"},
		{`{"id": "a", "perform_at": 1e11}`, "perform_at: out of range"},
		{`{"id": "a", "perform_in": -0.5}`, "perform_in: must not be negative"},
		{`{"id": "a", "perform_in": 1e11}`, "perform_in: out of range: the time would be after unix second 17179869184"},
		{`{"id": "a", "perform_in": 1, "perform_at": 1}`, "perform_in: give perform_at or perform_in, not both"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got, err := parseJobLine([]byte(tc.line), time.Now())
			if tc.err == "" {
				require.NoError(t, err)
				require.Equal(t, strings.TrimSpace(tc.line), string(got))
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestEnqueueFileNodeErrors(t *testing.T) {
	t.Parallel()
	n := newNode(t, withMaxPayload(100))

	// The node refuses a job (its payload limit is the node's to know): the
	// error names the line, and nothing of the batch is written.
	content := lines("a", 1, 4) + `{"id": "big", "payload": "` + strings.Repeat("x", 200) + `"}` + "\n" + lines("b", 1, 2)
	path := writeFile(t, "jobs.jsonl", content)
	r := n.run("enqueue", "--queue", "orders", "--file", path, "--batch", "3")
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly enqueue: "+path+":5: jobs[1].payload: 202 bytes, more than the limit of 100 (field jobs[1].payload; HTTP 400)\n"+
		"orderly enqueue: 3 jobs enqueued (lines 1 to 3); nothing from line 4 on was sent\n"+
		"orderly enqueue: to resume, rerun with --skip 3\n", r.stderr)
	require.Len(t, n.queued("orders"), 3)

	// An unknown queue.
	r = n.run("enqueue", "--queue", "nope", "--file", writeFile(t, "nope.jsonl", lines("n", 1, 2)))
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly enqueue: unknown queue \"nope\" (field queue; HTTP 404)\n"+
		"orderly enqueue: no job enqueued; nothing from line 1 on was sent\n", r.stderr)

	// The node fails (5xx) on the second batch: that batch may be partly in.
	base := n.enqueues.Load()
	n.setOnEnqueue(func(num int64) int {
		if num == base+2 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	r = n.run("enqueue", "--queue", "mail", "--file", writeFile(t, "m.jsonl", lines("m", 1, 7)), "--batch", "3")
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly enqueue: injected failure (HTTP 503)\n"+
		"orderly enqueue: 3 jobs enqueued (lines 1 to 3); the batch of lines 4 to 6 may be partly enqueued (the node did not confirm it); nothing after line 6 was sent\n"+
		"orderly enqueue: to resume, rerun with --skip 3 (jobs re-sent merge with those that got in: equal payloads are kept once)\n", r.stderr)
	n.setOnEnqueue(nil)

	// A single job the node refuses.
	r = n.run("enqueue", "--queue", "orders", "--id", "x", "--payload", strconv.Quote(strings.Repeat("y", 101)))
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly enqueue: jobs[0].payload: 103 bytes, more than the limit of 100 (field jobs[0].payload; HTTP 400)\n", r.stderr)
}

func TestEnqueueFileHostile(t *testing.T) {
	t.Parallel()
	n := newNode(t)

	// A line over 8 MiB: refused with its number, its batch unsent.
	huge := lines("a", 1, 1) + `{"id": "huge", "payload": "` + strings.Repeat("x", 9<<20) + `"}` + "\n" + lines("b", 1, 1)
	path := writeFile(t, "huge.jsonl", huge)
	r := n.run("enqueue", "--queue", "orders", "--file", path)
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly enqueue: "+path+":2: line longer than 8388608 bytes, more than one request may carry\n"+
		"orderly enqueue: no job enqueued; nothing from line 1 on was sent\n", r.stderr)
	require.Zero(t, n.enqueues.Load())

	// Binary garbage.
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + i/13)
	}
	r = n.run("enqueue", "--queue", "orders", "--file", writeFile(t, "garbage.bin", string(garbage)))
	require.Equal(t, ExitError, r.code)
	require.Regexp(t, `garbage.bin:1: malformed JSON at byte 1: invalid character '\\x00'`, r.stderr)
	require.NotContains(t, r.stderr, "\x00")
	require.Zero(t, n.enqueues.Load())

	// An id that is not UTF-8, as bytes and as an unpaired surrogate.
	for i, line := range []string{"{\"id\": \"\xc3\x28\"}", `{"id": "\udfff"}`} {
		r = n.run("enqueue", "--queue", "orders", "--file", writeFile(t, "utf8.jsonl", lines("c", 1, 2)+line+"\n"))
		require.Equal(t, ExitError, r.code, i)
		require.Contains(t, r.stderr, "utf8.jsonl:3: id: not valid UTF-8 (invalid bytes or an unpaired surrogate escape)\n")
	}
	require.Zero(t, n.enqueues.Load())

	// A missing file, a directory.
	r = n.run("enqueue", "--queue", "orders", "--file", filepath.Join(t.TempDir(), "missing.jsonl"))
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "missing.jsonl: no such file or directory")
	r = n.run("enqueue", "--queue", "orders", "--file", t.TempDir())
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "is a directory")
}

func TestEnqueueFileByteBatches(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	// Nine jobs of ~1 MB each: a batch is cut before 8 MiB, whatever
	// --batch says.
	var b strings.Builder
	payload := strings.Repeat("z", 1_000_000)
	for i := range 9 {
		fmt.Fprintf(&b, `{"id": "big-%d", "payload": %q}`+"\n", i, payload)
	}
	out := n.run("enqueue", "--queue", "orders", "--file", writeFile(t, "big.jsonl", b.String())).ok(t)
	require.Regexp(t, `^enqueued 9 jobs into orders`, out)
	require.EqualValues(t, 2, n.enqueues.Load())
	j := n.job("orders", "big-8")
	require.NotNil(t, j)
	require.Equal(t, `"`+payload+`"`, string(j.Payloads[0].Data))
}

func TestEnqueueSkip(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	path := writeFile(t, "jobs.jsonl", lines("s", 1, 10))
	out := n.run("enqueue", "--queue", "orders", "--file", path, "--skip", "4").ok(t)
	require.Regexp(t, `^enqueued 6 jobs into orders`, out)
	got := n.queued("orders")
	require.Len(t, got, 6)
	require.NotContains(t, got, "s4")
	require.Contains(t, got, "s5")

	// Skipped lines are not checked; skipping past the end enqueues nothing.
	path = writeFile(t, "bad-head.jsonl", "garbage\n"+lines("t", 1, 2))
	n.run("enqueue", "--queue", "mail", "--file", path, "--skip", "1").ok(t)
	require.Len(t, n.queued("mail"), 2)
	out = n.run("enqueue", "--queue", "mail", "--file", path, "--skip", "100").ok(t)
	require.Regexp(t, `^enqueued 0 jobs into mail`, out)
}

func TestEnqueueStdin(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	out := n.runWith(runOpts{stdin: strings.NewReader(lines("in", 1, 2500))}, "enqueue", "--queue", "orders", "--file", "-").ok(t)
	require.Regexp(t, `^enqueued 2500 jobs into orders`, out)
	require.Len(t, n.queued("orders"), 2500)
	require.EqualValues(t, 3, n.enqueues.Load())
	require.Equal(t, `{"n":2500}`, string(n.job("orders", "in2500").Payloads[0].Data))

	// From a terminal, a hint says how to end.
	r := n.runWith(runOpts{stdinTTY: true, stdin: strings.NewReader(`{"id": "typed"}` + "\n")}, "enqueue", "--queue", "mail", "--file", "-")
	r.ok(t)
	require.Equal(t, "orderly enqueue: reading jobs from the terminal, one JSON object a line; end with Ctrl-D\n", r.stderr)

	r = n.runWith(runOpts{stdin: strings.NewReader(`{"id": "x"}` + "\n" + `{"id": "x", "oops": 1}`)}, "enqueue", "--queue", "orders", "--file", "-")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "orderly enqueue: stdin:2: oops: unknown field")
}

func TestEnqueueProgress(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	tty := runOpts{stderrTTY: true}

	// A file: a bar with the share of the file done.
	path := writeFile(t, "jobs.jsonl", lines("p", 1, 5000))
	r := n.runWith(tty, "enqueue", "--queue", "orders", "--file", path)
	r.ok(t)
	require.Regexp(t, `^\r\[=+ +\]  1\d%  1000 jobs  \d+ jobs/s\x1b\[K`, r.stderr)
	require.True(t, strings.HasSuffix(r.stderr, "\r\x1b[K"), "the bar is erased: %q", r.stderr)
	require.Regexp(t, `^enqueued 5000 jobs`, r.stdout)

	// A pipe: a count.
	tty.stdin = strings.NewReader(lines("q", 1, 2500))
	r = n.runWith(tty, "enqueue", "--queue", "mail", "--file", "-")
	r.ok(t)
	require.Regexp(t, `^\r1000 jobs  \d+ jobs/s\x1b\[K`, r.stderr)

	// One batch: no bar.
	r = n.runWith(tty, "enqueue", "--queue", "mail", "--file", writeFile(t, "small.jsonl", lines("r", 1, 10)))
	r.ok(t)
	require.Empty(t, r.stderr)

	// Not a terminal: no bar.
	r = n.run("enqueue", "--queue", "orders", "--file", path)
	r.ok(t)
	require.Empty(t, r.stderr)
}

func TestEnqueueInterrupt(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The interrupt arrives while the first batch is in flight: that batch
	// completes, and the import stops.
	n.setOnEnqueue(func(num int64) int {
		if num == 1 {
			cancel()
		}
		return 0
	})
	r := n.runWith(runOpts{ctx: ctx}, "enqueue", "--queue", "orders", "--file", writeFile(t, "jobs.jsonl", lines("i", 1, 3500)))
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly enqueue: interrupted\n"+
		"orderly enqueue: 1000 jobs enqueued (lines 1 to 1000); nothing from line 1001 on was sent\n"+
		"orderly enqueue: to resume, rerun with --skip 1000\n", r.stderr)
	require.Len(t, n.queued("orders"), 1000)
	require.EqualValues(t, 1, n.enqueues.Load())
}

func TestEnqueueToken(t *testing.T) {
	t.Parallel()
	n := newNode(t, withToken("s3cret"))
	r := n.run("enqueue", "--queue", "orders", "--id", "a")
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly enqueue: missing or invalid bearer token (HTTP 401): the node needs its token: pass --http-token or set ORDERLY_HTTP_TOKEN\n", r.stderr)

	r = n.run("enqueue", "--queue", "orders", "--id", "a", "--http-token", "wrong")
	require.Equal(t, ExitError, r.code)

	n.run("enqueue", "--queue", "orders", "--id", "a", "--http-token", "s3cret").ok(t)
	path := writeFile(t, "jobs.jsonl", lines("t", 1, 3))
	n.runWith(runOpts{env: map[string]string{"ORDERLY_HTTP_TOKEN": "s3cret"}}, "enqueue", "--queue", "orders", "--file", path).ok(t)
	require.Len(t, n.queued("orders"), 4)
}

// The CLI's enqueues carry Orderly-Deadline: the instant it gives up on
// the request, after which the node must not store it.
func TestEnqueueSendsItsDeadline(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(apiv1.DeadlineHeader)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"enqueued": 1}`))
	}))
	defer srv.Close()
	start := time.Now()
	exec(runOpts{}, "enqueue", "--http", srv.URL, "--queue", "orders", "--id", "a").ok(t)
	end := time.Now()
	deadline, err := time.Parse(time.RFC3339Nano, <-got)
	require.NoError(t, err)
	require.True(t, deadline.After(start), "the deadline %s is after the request started", deadline)
	require.False(t, deadline.After(end.Add(requestTimeout)), "the deadline %s is the request's timeout at the latest", deadline)
}

func TestEnqueueUnreachable(t *testing.T) {
	t.Parallel()
	r := exec(runOpts{}, "enqueue", "--http", unreachable, "--queue", "orders", "--id", "a")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "orderly enqueue: cannot reach the node at 127.0.0.1:1: ")

	r = exec(runOpts{stdin: strings.NewReader(lines("u", 1, 3))}, "enqueue", "--http", unreachable, "--queue", "orders", "--file", "-")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "cannot reach the node at 127.0.0.1:1: ")
	require.Contains(t, r.stderr, "no job enqueued; nothing from line 1 on was sent\n")
}

// TestMaxBodyBytes keeps the batch limit in step with the node's default.
func TestMaxBodyBytes(t *testing.T) {
	t.Parallel()
	require.Equal(t, web.DefaultMaxBodyBytes, maxBodyBytes)
}
