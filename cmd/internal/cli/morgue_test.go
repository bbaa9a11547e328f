package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// evilID is a valid id made to upset a terminal: an escape sequence and a
// tab.
const evilID = "evil\x1b[31m\tid"

// morgueNode is a node whose orders morgue holds four entries, one a
// minute from t0: order-1 (JSON), order-2 (binary, a long error on two
// lines), order-3 (three payloads) and evilID.
func morgueNode(t *testing.T, opts ...nodeOption) *node {
	t.Helper()
	n := newNode(t, opts...)
	n.kill("orders", "boom", newJob("order-1", `{"sku":1}`))
	n.clock.Advance(time.Minute)
	n.kill("orders", "line one\nline two "+strings.Repeat("x", 100), newJob("order-2", "\x00\xff"))
	n.clock.Advance(time.Minute)
	for _, p := range []string{`"a"`, `"b"`, `"c"`} {
		n.kill("orders", "boom", newJob("order-3", p))
	}
	n.clock.Advance(time.Minute)
	n.kill("orders", "boom", newJob(evilID, `"x"`))
	return n
}

func TestMorgueList(t *testing.T) {
	t.Parallel()
	n := morgueNode(t)

	out := n.run("morgue", "list", "--queue", "orders").ok(t)
	require.Equal(t, `ID                UPDATED               ERROR                                     PAYLOADS
evil\x1b[31m\tid  2023-11-14T22:16:20Z  boom                                      "x"
order-1           2023-11-14T22:13:20Z  boom                                      {"sku":1}
order-2           2023-11-14T22:14:20Z  line one\nline two xxxxxxxxxxxxxxxxxxxx…  base64:AP8=
order-3           2023-11-14T22:15:20Z  boom                                      3: "a", "b", "c"
`, out)

	// Pages: the cursor of the first continues after it.
	out = n.run("morgue", "list", "--queue", "orders", "--limit", "2").ok(t)
	m := regexp.MustCompile(`(?m)^next: (\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.Equal(t, 4, strings.Count(out, "\n"), out)
	require.Contains(t, out, "order-1")
	out = n.run("morgue", "list", "--queue", "orders", "--limit", "2", "--cursor", m[1]).ok(t)
	require.Contains(t, out, "order-2")
	require.Contains(t, out, "order-3")
	require.NotContains(t, out, "order-1")
	require.NotContains(t, out, "next:")

	// By updated_at, newest first; bounds.
	out = n.run("morgue", "list", "--queue", "orders", "--order", "updated_at", "--rev").ok(t)
	require.Regexp(t, `(?s)^ID +UPDATED.*\nevil.*\norder-3 .*\norder-2 .*\norder-1 .*\n$`, out)
	out = n.run("morgue", "list", "--queue", "orders", "--min", "order-2", "--max", "order-2").ok(t)
	require.Regexp(t, `^ID .*\norder-2 .*\n$`, out)
	out = n.run("morgue", "list", "--queue", "orders", "--order", "updated_at", "--min", "1700000100").ok(t)
	require.Regexp(t, `^ID .*\norder-3 .*\nevil.*\n$`, out)
	out = n.run("morgue", "list", "--queue", "orders", "--min", "zzz").ok(t)
	require.Equal(t, "no more entries\n", out)
	out = n.run("morgue", "list", "--queue", "mail").ok(t)
	require.Equal(t, "the morgue of mail is empty\n", out)

	// --json: the API's answer, payloads as JSON or base64, whole.
	out = n.run("morgue", "list", "--queue", "orders", "--json", "--min", "order-2").ok(t)
	var page apiv1.MorguePage
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	require.Len(t, page.Entries, 2)
	require.Equal(t, "order-2", page.Entries[0].ID)
	require.Equal(t, []byte{0x00, 0xff}, page.Entries[0].Payloads[0].Data)
	require.Contains(t, out, `"payload_base64": "AP8="`)
	require.Equal(t, "line one\nline two "+strings.Repeat("x", 100), page.Entries[0].Error)
	require.Equal(t, 3, page.Entries[1].PayloadCount)
	require.Contains(t, out, `"payload": "a"`)

	// The node checks what only it knows.
	r := n.run("morgue", "list", "--queue", "orders", "--cursor", "garbage")
	require.Equal(t, ExitError, r.code)
	require.Regexp(t, `^orderly morgue list: cursor: .*\(field cursor; HTTP 400\)\n$`, r.stderr)
	r = n.run("morgue", "list", "--queue", "nope")
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly morgue list: unknown queue \"nope\" (field queue; HTTP 404)\n", r.stderr)
}

func TestMorgueListErrorSearch(t *testing.T) {
	t.Parallel()
	n := morgueNode(t)
	out := n.run("morgue", "list", "--queue", "orders", "--error", "LINE TWO").ok(t)
	require.Contains(t, out, "order-2")
	require.NotContains(t, out, "order-1")
	require.Contains(t, out, "searched 4 entries\n")
	require.Equal(t, "no match\n", n.run("morgue", "list", "--queue", "orders", "--error", "nothing").ok(t))
}

func TestMorgueListUsage(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{}, "--queue is required"},
		{[]string{"--queue", "orders", "--order", "perform_at"}, `--order must be id or updated_at, got "perform_at"`},
		{[]string{"--queue", "orders", "--limit", "0"}, "--limit must be between 1 and 1000, got 0"},
		{[]string{"--queue", "orders", "--limit", "1001"}, "--limit must be between 1 and 1000, got 1001"},
		{[]string{"--queue", "orders", "--limit", "x"}, `invalid value "x" for flag --limit`},
		{[]string{"--queue", "orders", "--rev=maybe"}, `invalid boolean value "maybe" for flag --rev`},
		{[]string{"--queue", "orders", "extra"}, `unexpected argument "extra"`},
		{[]string{"--queue", "orders", "--yes"}, "unknown flag --yes"},
	} {
		r := n.run(append([]string{"morgue", "list"}, tc.args...)...)
		require.Equal(t, ExitUsage, r.code, tc.args)
		require.Contains(t, r.stderr, tc.msg, tc.args)
	}
}

func TestMorgueRequeueDelete(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"requeue", "delete"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			n := morgueNode(t)
			done := action + "d"
			// requeued entries are queued again; deleted ones are gone.
			check := func(id string) {
				t.Helper()
				require.NotContains(t, n.morgueIDs("orders"), id)
				if action == "requeue" {
					require.NotNil(t, n.job("orders", id), id)
				} else {
					require.Nil(t, n.job("orders", id), id)
				}
			}

			// Named ids, flags before or after them.
			out := n.run("morgue", action, "order-1", "--queue", "orders", evilID).ok(t)
			require.Equal(t, done+" 2\n", out)
			check("order-1")
			check(evilID)

			// Ids that are not there are skipped, and said so.
			out = n.run("morgue", action, "--queue", "orders", "order-2", "nope", "order-1").ok(t)
			require.Equal(t, done+" 1\n2 of the 3 ids were not in the morgue\n", out)
			check("order-2")
			n.kill("orders", "boom", newJob("order-9", `9`))
			out = n.run("morgue", action, "--queue", "orders", "order-9", "nope").ok(t)
			require.Equal(t, done+" 1\n1 of the 2 ids was not in the morgue\n", out)
			check("order-9")

			// An id that looks like a flag, after "--"; --json.
			n.kill("orders", "boom", newJob("-dash", `""`))
			out = n.run("morgue", action, "--queue", "orders", "--json", "--", "-dash").ok(t)
			require.JSONEq(t, `{"`+done+`": 1}`, out)
			check("-dash")

			// Bad usage changes nothing.
			for _, tc := range []struct {
				args []string
				msg  string
			}{
				{[]string{"order-3"}, "--queue is required"},
				{[]string{"--queue", "orders"}, "give the ids to " + action + ", or --all"},
				{[]string{"--queue", "orders", "--all", "order-3"}, "give ids or --all, not both"},
				{[]string{"--queue", "orders", "order-3", ""}, "id 2 (-): must not be empty"},
				{[]string{"--queue", "orders", "a\xffb"}, `id 1 (a\xffb): not valid UTF-8`},
				{[]string{"--queue", "orders", strings.Repeat("i", 513)}, "id 1 (iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii…): longer than 512 bytes"},
				{[]string{"--queue", "orders", "--all"}, "--all " + action + "s the whole morgue; confirm with --yes (stdin is not a terminal to ask)"},
				{[]string{"--queue", "orders", "--limit", "1", "order-3"}, "unknown flag --limit"},
			} {
				r := n.run(append([]string{"morgue", action}, tc.args...)...)
				require.Equal(t, ExitUsage, r.code, tc.args)
				require.Contains(t, r.stderr, tc.msg, tc.args)
			}
			require.Equal(t, []string{"order-3"}, n.morgueIDs("orders"))

			// --all on a terminal asks; anything but yes refuses.
			for _, answer := range []string{"n\n", "\n", "", "yes please\n"} {
				r := n.runWith(runOpts{stdinTTY: true, stdin: strings.NewReader(answer)}, "morgue", action, "--queue", "orders", "--all")
				require.Equal(t, ExitError, r.code, answer)
				eol := "" // the terminal echoes the answer and its newline; at end of input, the command ends the line
				if !strings.HasSuffix(answer, "\n") {
					eol = "\n"
				}
				require.True(t, strings.HasSuffix(r.stderr, "[y/N] "+eol+"orderly morgue "+action+": not confirmed; nothing changed\n"), "%q", r.stderr)
			}
			require.Equal(t, []string{"order-3"}, n.morgueIDs("orders"))
			r := n.runWith(runOpts{stdinTTY: true, stdin: strings.NewReader("Y\n")}, "morgue", action, "--queue", "orders", "--all")
			require.Equal(t, ExitOK, r.code, r.stderr)
			prompt := strings.ToUpper(action[:1]) + action[1:] + " the 1 entry of the morgue of orders?"
			if action == "delete" {
				prompt += " This cannot be undone."
			}
			require.Equal(t, prompt+" [y/N] ", r.stderr)
			require.Equal(t, done+" 1\n", r.stdout)
			check("order-3")

			// --all --yes asks nothing.
			n.kill("orders", "boom", newJob("k1", `1`), newJob("k2", `2`))
			out = n.run("morgue", action, "--queue", "orders", "--all", "--yes").ok(t)
			require.Equal(t, done+" 2\n", out)
			require.Empty(t, n.morgueIDs("orders"))

			// An unknown queue.
			r = n.run("morgue", action, "--queue", "nope", "x")
			require.Equal(t, ExitError, r.code)
			require.Equal(t, "orderly morgue "+action+": unknown queue \"nope\" (field queue; HTTP 404)\n", r.stderr)
		})
	}
}

func TestMorgueToken(t *testing.T) {
	t.Parallel()
	n := morgueNode(t, withToken("s3cret"))
	for _, args := range [][]string{
		{"morgue", "list", "--queue", "orders"},
		{"morgue", "requeue", "--queue", "orders", "order-1"},
		{"morgue", "delete", "--queue", "orders", "order-2"},
	} {
		r := n.run(args...)
		require.Equal(t, ExitError, r.code, args)
		require.Contains(t, r.stderr, "missing or invalid bearer token (HTTP 401)", args)
	}
	require.Len(t, n.morgueIDs("orders"), 4)
	n.run("morgue", "list", "--queue", "orders", "--http-token", "s3cret").ok(t)
	n.run("morgue", "requeue", "--queue", "orders", "--http-token", "s3cret", "order-1").ok(t)
	n.runWith(runOpts{env: map[string]string{"ORDERLY_HTTP_TOKEN": "s3cret"}}, "morgue", "delete", "--queue", "orders", "order-2").ok(t)
	require.Len(t, n.morgueIDs("orders"), 2)
}

func TestMorgueCommand(t *testing.T) {
	t.Parallel()
	r := exec(runOpts{}, "morgue")
	require.Equal(t, ExitUsage, r.code)
	require.Equal(t, "orderly morgue: missing command: list, requeue or delete (see orderly morgue --help)\n", r.stderr)
	r = exec(runOpts{}, "morgue", "purge")
	require.Equal(t, ExitUsage, r.code)
	require.Equal(t, "orderly morgue: unknown command \"purge\" (see orderly morgue --help)\n", r.stderr)
	r = exec(runOpts{}, "morgue", "lst")
	require.Equal(t, ExitUsage, r.code)
	require.Equal(t, "orderly morgue: unknown command \"lst\"; did you mean list? (see orderly morgue --help)\n", r.stderr)
	r = exec(runOpts{}, "morgue", "--help")
	require.Equal(t, ExitOK, r.code)
	require.Contains(t, r.stdout, "orderly morgue delete  --queue Q (--all [--yes] | ID...)")
}

func TestPayloadsCell(t *testing.T) {
	t.Parallel()
	type entry = apiv1.MorgueEntry
	type p = wire.Payload
	for _, tc := range []struct {
		entry entry
		want  string
	}{
		{entry{}, "-"},
		{entry{Payloads: []p{{Data: []byte(`{"a":1}`)}}, PayloadCount: 1}, `{"a":1}`},
		{entry{Payloads: []p{{Data: []byte{0, 1, 2, 3}}}, PayloadCount: 1}, "base64:AAECAw=="},
		{entry{Payloads: []p{{Data: []byte(`1`)}, {Data: []byte(`2`)}}, PayloadCount: 12}, "12: 1, 2, …"},
		{entry{Payloads: []p{{Data: []byte(`"` + strings.Repeat("long ", 20) + `"`)}}, PayloadCount: 1},
			`"long long long long long long long long long long long lon…`},
		{entry{Payloads: []p{{Data: []byte(`"\u001b[2J"`)}}, PayloadCount: 1}, `"\u001b[2J"`},
	} {
		require.Equal(t, tc.want, payloadsCell(tc.entry))
	}
}
