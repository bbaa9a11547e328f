package usage

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSuggest(t *testing.T) {
	t.Parallel()
	commands := []string{"enqueue", "stats", "members", "morgue", "bench", "version", "help"}
	for _, tc := range []struct{ word, want string }{
		{"stast", "stats"},
		{"enqeue", "enqueue"},
		{"morge", "morgue"},
		{"versoin", "version"},
		{"mem", "members"}, // the only command it starts
		{"m", ""},          // too short to be a prefix
		{"frobnicate", ""},
		{"e", ""},
		{strings.Repeat("x", 100), ""},
	} {
		require.Equal(t, tc.want, Suggest(tc.word, commands), tc.word)
	}
	require.Equal(t, "", Suggest("mor", []string{"morgue", "mortal"}), "an ambiguous prefix suggests nothing")
}

func TestFlagError(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("queue", "", "")
	fs.Int("limit", 0, "")
	fs.Bool("rev", false, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--queu", "q"}, "unknown flag --queu; did you mean --queue?"},
		{[]string{"-limt=1"}, "unknown flag --limt; did you mean --limit?"},
		{[]string{"--frobnicate"}, "unknown flag --frobnicate"},
		{[]string{"--queue"}, "flag --queue needs a value"},
		{[]string{"--limit", "x"}, `invalid value "x" for flag --limit: parse error`},
		{[]string{"--rev=maybe"}, `invalid boolean value "maybe" for flag --rev: parse error`},
	} {
		err := fs.Parse(tc.args)
		require.Error(t, err, tc.args)
		require.EqualError(t, FlagError(fs, err), tc.want, tc.args)
	}
	other := errors.New("something else")
	require.Equal(t, other, FlagError(fs, other))
}

// One style for every command: --flag, the value's type, the help, then
// the default and the environment variable.
func TestWrite(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	fs.String("http", "127.0.0.1:8080", "address of a node's HTTP API")
	fs.String("queue", "", "show this `queue` only")
	fs.Bool("json", false, "print JSON")
	fs.Int("limit", 100, "entries per page")
	var b strings.Builder
	Write(&b, Help{
		Usage:    []string{"orderly stats [flags]", "orderly stats --queue Q"},
		Text:     "Shows metrics.",
		Examples: []string{"orderly stats --json"},
	}, FlagsOf(fs, map[string]string{"http": "ORDERLY_HTTP"}))
	require.Equal(t, `Usage: orderly stats [flags]
       orderly stats --queue Q

Shows metrics.

Examples:
  orderly stats --json

Flags:
  --http string
        address of a node's HTTP API
        (default 127.0.0.1:8080; env ORDERLY_HTTP)
  --json
        print JSON
  --limit int
        entries per page
        (default 100)
  --queue queue
        show this queue only
`, b.String())
}
