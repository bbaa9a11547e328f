package cli

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// This file formats values for tables: durations for people, and cells
// that neither break the table's columns nor reach the terminal as control
// sequences (ids, errors and payloads are anybody's bytes).

// formatDuration renders d for people, with two units at most: 0s, 250ms,
// 1.2s, 42s, 3m4s, 2h5m, 3d4h.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second-500*time.Microsecond:
		return fmt.Sprintf("%dms", max(d.Round(time.Millisecond).Milliseconds(), 1))
	case d < 10*time.Second-50*time.Millisecond:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%ds", s/60, s%60)
	}
	m := int64(d.Round(time.Minute) / time.Minute)
	if m < 24*60 {
		return fmt.Sprintf("%dh%dm", m/60, m%60)
	}
	h := int64(d.Round(time.Hour) / time.Hour)
	return fmt.Sprintf("%dd%dh", h/24, h%24)
}

// seconds converts float seconds, as the API gives times, to a duration;
// values past what a Duration holds saturate.
func seconds(s float64) time.Duration {
	switch {
	case math.IsNaN(s) || s <= 0:
		return 0
	case s >= float64(math.MaxInt64)/float64(time.Second):
		return math.MaxInt64
	}
	return time.Duration(s * float64(time.Second))
}

// unixTime renders float unix seconds as a UTC time, to the second.
func unixTime(s float64) string {
	if s <= 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return "-"
	}
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format("2006-01-02T15:04:05Z")
}

// relativeTime renders float unix seconds as unixTime does, followed by
// how far it is from now: "2026-01-02T15:04:05Z (in 29m55s)", "(3s ago)".
func (e *env) relativeTime(s float64) string {
	d := time.Duration(s*float64(time.Second)) - time.Duration(e.now().UnixNano())
	switch {
	case d > -time.Second && d < time.Second:
		return unixTime(s) + " (now)"
	case d > 0:
		return unixTime(s) + " (in " + formatDuration(d) + ")"
	}
	return unixTime(s) + " (" + formatDuration(-d) + " ago)"
}

// printable escapes what a terminal would interpret or a table would break
// on: control characters (tab and newline included), other unprintable
// runes and invalid UTF-8, written as Go escapes (\n, \x1b, \u202e, \xff).
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += size
	}
	return b.String()
}

// truncate shortens s to at most n runes, ending it with "…" when it cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i] + "…"
}

// cell is s made safe for a table cell and cut to n runes; empty is "-".
func cell(s string, n int) string {
	if s == "" {
		return "-"
	}
	return truncate(printable(s), n)
}
