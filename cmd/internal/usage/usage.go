// Package usage renders the orderly command's help in one style, for the
// node's flags and every subcommand's:
//
//	Usage: orderly stats [--queue Q] [flags]
//
//	What the command does.
//
//	Examples:
//	  orderly stats --queue orders --json
//
//	Flags:
//	  --queue string
//	        show this queue only
//	  --http string
//	        address of a node's HTTP API, host:port or URL
//	        (default 127.0.0.1:8080; env ORDERLY_HTTP)
//
// It also turns the errors of package flag into messages that spell flags
// as the help does (--name) and suggest the nearest name of a mistyped
// command, flag or key (Suggest).
package usage

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Help documents a command.
type Help struct {
	// Usage holds the synopsis lines, without "Usage: ".
	Usage []string
	// Text says what the command does, in a paragraph or two.
	Text string
	// Examples are command lines, shown indented.
	Examples []string
}

// Flag documents one flag.
type Flag struct {
	// Name is the flag's name, without dashes.
	Name string
	// Type names the flag's value ("string", "int", a placeholder such as
	// "URL"); empty for a boolean flag, which takes none.
	Type string
	// Help says what the flag does.
	Help string
	// Default is the value the flag has when not given, empty when there
	// is none worth showing.
	Default string
	// Env names the environment variable that sets the flag, if any.
	Env string
}

// Write writes h, then flags under "Flags:".
func Write(w io.Writer, h Help, flags []Flag) {
	var b strings.Builder
	for i, u := range h.Usage {
		if i == 0 {
			fmt.Fprintf(&b, "Usage: %s\n", u)
		} else {
			fmt.Fprintf(&b, "       %s\n", u)
		}
	}
	if h.Text != "" {
		fmt.Fprintf(&b, "\n%s\n", h.Text)
	}
	if len(h.Examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, ex := range h.Examples {
			fmt.Fprintf(&b, "  %s\n", ex)
		}
	}
	if len(flags) > 0 {
		b.WriteString("\nFlags:\n")
		WriteFlags(&b, flags)
	}
	_, _ = io.WriteString(w, b.String())
}

// WriteFlags writes flags, each as
//
//	--name type
//	      help
//	      (default value; env NAME)
func WriteFlags(w io.Writer, flags []Flag) {
	var b strings.Builder
	for _, f := range flags {
		fmt.Fprintf(&b, "  --%s", f.Name)
		if f.Type != "" {
			fmt.Fprintf(&b, " %s", f.Type)
		}
		fmt.Fprintf(&b, "\n        %s\n", f.Help)
		var notes []string
		if f.Default != "" {
			notes = append(notes, "default "+f.Default)
		}
		if f.Env != "" {
			notes = append(notes, "env "+f.Env)
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, "        (%s)\n", strings.Join(notes, "; "))
		}
	}
	_, _ = io.WriteString(w, b.String())
}

// FlagsOf documents the flags of fs in name order: the type from
// flag.UnquoteUsage (a `name` in backquotes in the usage names the value),
// the default unless it is the zero value, and the environment variable
// from env, by flag name.
func FlagsOf(fs *flag.FlagSet, env map[string]string) []Flag {
	var out []Flag
	fs.VisitAll(func(f *flag.Flag) {
		typ, help := flag.UnquoteUsage(f)
		if isBool(f) {
			typ = ""
		}
		def := f.DefValue
		switch def {
		case "", "0", "false":
			def = ""
		}
		out = append(out, Flag{Name: f.Name, Type: typ, Help: help, Default: def, Env: env[f.Name]})
	})
	return out
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// FlagError rewrites an error of fs.Parse in the help's spelling, with a
// suggestion for an unknown flag: `unknown flag --concurency; did you mean
// --concurrency?`. Other errors are returned as they are.
func FlagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		msg = "unknown flag --" + name
		if s := Suggest(name, names); s != "" {
			msg += "; did you mean --" + s + "?"
		}
		return errors.New(msg)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("flag --%s needs a value", name)
	}
	// "invalid value "x" for flag -n: ...", "invalid boolean value "x" for -b: ..."
	for _, from := range []string{" for flag -", " for -"} {
		if i := strings.Index(msg, from); i >= 0 {
			return errors.New(msg[:i] + " for flag --" + msg[i+len(from):])
		}
	}
	return err
}

// Suggest returns the candidate word was likely meant to be, or "": the
// nearest within two edits, else the only candidate that starts with word
// (of two bytes or more).
func Suggest(word string, candidates []string) string {
	if len(word) > 64 {
		return ""
	}
	best, bestDist := "", 3 // at most two edits away
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" || len(word) < 2 {
		return best
	}
	for _, c := range candidates {
		if strings.HasPrefix(c, word) {
			if best != "" {
				return "" // ambiguous
			}
			best = c
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
