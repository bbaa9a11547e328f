package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file walks JSON that json.Valid accepted, without decoding it into
// maps: enqueue bodies hold up to MaxBodyBytes of jobs, and the walk keeps
// the keys' order, sees repeated keys and matches names exactly (which
// encoding/json does not). The helpers return reasons; callers name the
// field.

// errMalformed guards the walk against input that is not well-formed JSON
// (it never is: bodies are checked first).
var errMalformed = errors.New("malformed JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// skipSpace returns the index of the first non-space byte of b at or after
// i, or len(b).
func skipSpace(b []byte, i int) int {
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

// eachElement calls fn with the index and bytes of every element of a
// well-formed JSON array, in order, until fn fails.
func eachElement(arr []byte, fn func(n int, val []byte) error) error {
	i := skipSpace(arr, 0) + 1 // past '['
	for n := 0; ; n++ {
		if i = skipSpace(arr, i); i >= len(arr) {
			return errMalformed
		}
		if arr[i] == ']' {
			return nil
		}
		end := valueEnd(arr, i)
		if err := fn(n, arr[i:end]); err != nil {
			return err
		}
		if i = skipSpace(arr, end); i < len(arr) && arr[i] == ',' {
			i++
		}
	}
}

// eachField calls fn with every key and value of a well-formed JSON object,
// in order, until fn fails.
func eachField(obj []byte, fn func(key string, val []byte) error) error {
	i := skipSpace(obj, 0) + 1 // past '{'
	for {
		if i = skipSpace(obj, i); i >= len(obj) {
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
		i = skipSpace(obj, skipSpace(obj, keyEnd)+1) // past ':'
		if i >= len(obj) {
			return errMalformed
		}
		end := valueEnd(obj, i)
		if err := fn(key, obj[i:end]); err != nil {
			return err
		}
		if i = skipSpace(obj, end); i < len(obj) && obj[i] == ',' {
			i++
		}
	}
}

// kindOf names the kind of a well-formed JSON value, with its article, for
// messages.
func kindOf(val []byte) string {
	i := skipSpace(val, 0)
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

// decodeString decodes a JSON string value that must survive decoding
// unchanged: encoding/json silently replaces invalid UTF-8 and unpaired
// surrogate escapes with U+FFFD, which would turn an id into another one.
func decodeString(val []byte) (string, error) {
	if k := kindOf(val); k != "a string" {
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

// finiteNumber decodes a JSON number that must be finite as a float64.
func finiteNumber(val []byte) (float64, error) {
	if k := kindOf(val); k != "a number" {
		return 0, fmt.Errorf("must be a number, got %s", k)
	}
	f, err := strconv.ParseFloat(string(val), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("must be a finite number (%s does not fit a float64)", truncate(string(val), 32))
	}
	return f, nil
}

// compactJSON reports whether well-formed JSON b has no insignificant
// whitespace.
func compactJSON(b []byte) bool {
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
