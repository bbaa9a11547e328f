// Package jsonscan walks JSON that json.Valid accepted, without decoding it
// into maps: enqueue bodies hold megabytes of jobs, and the walk keeps the
// keys' order, sees repeated keys and matches names exactly (which
// encoding/json does not). The helpers return reasons; callers name the
// field. The HTTP API (web) and its wire types (web/apiv1) share it.
package jsonscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// errMalformed guards the walk against input that is not well-formed JSON
// (it never is: bodies are checked first).
var errMalformed = errors.New("malformed JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// SkipSpace returns the index of the first non-space byte of b at or after
// i, or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index just after the string literal that starts at
// b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just after the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default: // a number, true, false or null
		for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return i
	}
}

// EachElement calls fn with the index and bytes of every element of a
// well-formed JSON array, in order, until fn fails.
func EachElement(arr []byte, fn func(n int, val []byte) error) error {
	i := SkipSpace(arr, 0) + 1 // past '['
	for n := 0; ; n++ {
		if i = SkipSpace(arr, i); i >= len(arr) {
			return errMalformed
		}
		if arr[i] == ']' {
			return nil
		}
		end := valueEnd(arr, i)
		if err := fn(n, arr[i:end]); err != nil {
			return err
		}
		if i = SkipSpace(arr, end); i < len(arr) && arr[i] == ',' {
			i++
		}
	}
}

// EachField calls fn with every key and value of a well-formed JSON object,
// in order, until fn fails.
func EachField(obj []byte, fn func(key string, val []byte) error) error {
	i := SkipSpace(obj, 0) + 1 // past '{'
	for {
		if i = SkipSpace(obj, i); i >= len(obj) {
			return errMalformed
		}
		if obj[i] == '}' {
			return nil
		}
		keyEnd := stringEnd(obj, i)
		key, err := unquote(obj[i:keyEnd])
		if err != nil {
			key = string(obj[i+1 : keyEnd-1]) // shown in the error, escapes and all
		}
		i = SkipSpace(obj, SkipSpace(obj, keyEnd)+1) // past ':'
		if i >= len(obj) {
			return errMalformed
		}
		end := valueEnd(obj, i)
		if err := fn(key, obj[i:end]); err != nil {
			return err
		}
		if i = SkipSpace(obj, end); i < len(obj) && obj[i] == ',' {
			i++
		}
	}
}

// KindOf names the kind of a well-formed JSON value, with its article, for
// messages.
func KindOf(val []byte) string {
	i := SkipSpace(val, 0)
	if i == len(val) {
		return "nothing"
	}
	switch val[i] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// DecodeString decodes a JSON string value that must survive decoding
// unchanged: encoding/json silently replaces invalid UTF-8 and unpaired
// surrogate escapes with U+FFFD, which would turn an id into another one.
func DecodeString(val []byte) (string, error) {
	if k := KindOf(val); k != "a string" {
		return "", fmt.Errorf("must be a string, got %s", k)
	}
	return unquote(val)
}

// unquote decodes a JSON string literal, refusing what would not survive.
func unquote(lit []byte) (string, error) {
	if !utf8.Valid(lit) || !pairedSurrogates(lit) {
		return "", errors.New("not valid UTF-8 (invalid bytes or an unpaired surrogate escape)")
	}
	plain := len(lit) >= 2
	for _, c := range lit {
		plain = plain && c != '\\'
	}
	if plain {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", err
	}
	return s, nil
}

// pairedSurrogates reports whether every surrogate \u escape of a
// well-formed JSON string literal is a high one followed by a low one.
func pairedSurrogates(lit []byte) bool {
	hex := func(i int) rune {
		if i+4 > len(lit) {
			return -1
		}
		v, err := strconv.ParseUint(string(lit[i:i+4]), 16, 16)
		if err != nil {
			return -1
		}
		return rune(v)
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		if i++; i >= len(lit) || lit[i] != 'u' {
			continue
		}
		r := hex(i + 1)
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r >= 0xDC00 || i+2 >= len(lit) || lit[i+1] != '\\' || lit[i+2] != 'u' {
			return false
		}
		if low := hex(i + 3); low < 0xDC00 || low > 0xDFFF {
			return false
		}
		i += 6
	}
	return true
}

// FiniteNumber decodes a JSON number that must be finite as a float64.
func FiniteNumber(val []byte) (float64, error) {
	if k := KindOf(val); k != "a number" {
		return 0, fmt.Errorf("must be a number, got %s", k)
	}
	f, err := strconv.ParseFloat(string(val), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("must be a finite number (%s does not fit a float64)", Truncate(string(val), 32))
	}
	return f, nil
}

// IsCompact reports whether well-formed JSON b has no insignificant
// whitespace.
func IsCompact(b []byte) bool {
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case isSpace(c):
			return false
		}
	}
	return true
}

// Truncate cuts s to at most n bytes (on a rune boundary), marking the cut
// with "...", for quoting input in messages.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
