// Package jsonscan walks JSON bodies of the HTTP API that json.Valid
// accepted, without decoding them into maps: enqueue bodies hold megabytes
// of jobs, and the walk keeps the keys' order, sees repeated keys and
// matches names exactly (which encoding/json does not). The tokenizer is
// jsontext (github.com/go-json-experiment/json/jsontext, the upstream of
// Go's encoding/json/jsontext), with duplicate names and invalid UTF-8
// allowed, so that the walk accepts what json.Valid accepts and callers
// judge names and values themselves. Values are handed out as parts of the
// body (no copy). The helpers return reasons; callers name the field. The
// HTTP API (web) and its wire types (web/apiv1) share it.
package jsonscan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// SkipSpace returns the index of the first non-space byte of b at or after
// i, or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// walker reads one JSON value of a body; pooled, as a job's fields are
// walked once per job.
type walker struct {
	src     []byte
	buf     bytes.Buffer // over src: the decoder reads src in place
	dec     jsontext.Decoder
	scratch []byte // for keys with escapes
}

var walkers = sync.Pool{New: func() any { return new(walker) }}

// walkOptions accept what json.Valid accepts.
var walkOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// newWalker returns a pooled walker over b, positioned inside the array or
// object that b holds (its opening token read); release it with put.
func newWalker(b []byte, open jsontext.Kind) (*walker, error) {
	w := walkers.Get().(*walker)
	w.src = b
	w.buf = *bytes.NewBuffer(b)
	w.dec.Reset(&w.buf, walkOptions...)
	tok, err := w.dec.ReadToken()
	if err == nil && tok.Kind() != open {
		err = fmt.Errorf("not %s", KindOf(b))
	}
	if err != nil {
		w.put()
		return nil, err
	}
	return w, nil
}

func (w *walker) put() {
	w.src, w.buf = nil, bytes.Buffer{}
	w.dec.Reset(&w.buf) // drop the reference to the body
	walkers.Put(w)
}

// value reads the next value and returns it as a part of the body.
func (w *walker) value() ([]byte, error) {
	v, err := w.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	end := int(w.dec.InputOffset())
	return w.src[end-len(v) : end], nil
}

// ErrMalformed is wrapped by the errors of WalkArray for a body that is not
// well-formed JSON.
var ErrMalformed = errors.New("jsonscan: malformed JSON")

// Element is one element of the array that WalkArray walks.
type Element struct {
	w    *walker
	kind jsontext.Kind
	read bool // the element was read (Bytes), or its fields walked
}

// Kind names the element's kind, with its article, as KindOf does.
func (e *Element) Kind() string {
	switch e.kind {
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
	}
	return "a number"
}

// Bytes reads the whole element and returns it, a part of the body.
func (e *Element) Bytes() ([]byte, error) {
	e.read = true
	v, err := e.w.value()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return v, nil
}

// EachField calls fn with every key and value of the element, an object,
// in order, as EachField does. When fn fails, the rest of the object is
// skipped (its syntax checked) and fn's error returned.
func (e *Element) EachField(fn func(key, val []byte) error) error {
	e.read = true
	if _, err := e.w.dec.ReadToken(); err != nil { // {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return e.w.fields(fn)
}

// fields walks the fields of the object whose opening brace was read, up
// to its closing one. Once fn fails, the rest is skipped and fn's error
// returned; a syntax error wraps ErrMalformed.
func (w *walker) fields(fn func(key, val []byte) error) error {
	return w.walkFields(false, fn)
}

// walkFields is fields, giving each name as its literal (quotes and
// escapes) when raw is set.
func (w *walker) walkFields(raw bool, fn func(key, val []byte) error) error {
	var failed error
	for w.dec.PeekKind() != '}' {
		if failed != nil {
			if err := w.dec.SkipValue(); err != nil {
				return fmt.Errorf("%w: %w", ErrMalformed, err)
			}
			continue
		}
		name, err := w.value()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		key := name
		if !raw {
			if key, err = w.unquote(name); err != nil {
				key = name[1 : len(name)-1]
			}
		}
		val, err := w.value()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		failed = fn(key, val)
	}
	if _, err := w.dec.ReadToken(); err != nil { // }
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return failed
}

// WalkArray walks arr, a JSON array, in one pass that checks its syntax as
// it goes, calling fn with each element in order; an element that fn does
// not read is skipped. Once fn fails, the walk goes on without calling it,
// to check the rest: a body that is not well-formed JSON (trailing data
// included) returns an error wrapping ErrMalformed, whatever fn returned;
// else fn's first error is returned. Duplicate names and invalid UTF-8 are
// accepted, as json.Valid accepts them.
func WalkArray(arr []byte, fn func(i int, e *Element) error) error {
	w, err := newWalker(arr, '[')
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	defer w.put()
	var failed error
	for i := 0; ; i++ {
		kind := w.dec.PeekKind()
		if kind == ']' {
			break
		}
		e := Element{w: w, kind: kind}
		if failed == nil && kind != 0 {
			failed = fn(i, &e)
			if errors.Is(failed, ErrMalformed) {
				return failed
			}
		}
		if !e.read {
			if err := w.dec.SkipValue(); err != nil {
				return fmt.Errorf("%w: %w", ErrMalformed, err)
			}
		}
	}
	if _, err := w.dec.ReadToken(); err != nil { // ]
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if _, err := w.dec.ReadToken(); err != io.EOF { //nolint:errorlint // jsontext returns io.EOF itself
		return fmt.Errorf("%w: data after the array", ErrMalformed)
	}
	return failed
}

// EachElement calls fn with the index and bytes of every element of a
// well-formed JSON array, in order, until fn fails.
func EachElement(arr []byte, fn func(n int, val []byte) error) error {
	w, err := newWalker(arr, '[')
	if err != nil {
		return err
	}
	defer w.put()
	for n := 0; w.dec.PeekKind() != ']'; n++ {
		val, err := w.value()
		if err != nil {
			return err
		}
		if err := fn(n, val); err != nil {
			return err
		}
	}
	return nil
}

// EachField calls fn with every key and value of a well-formed JSON object,
// in order, until fn fails. The key is decoded; one that does not survive
// decoding (see DecodeString) is given as it is written, escapes and all,
// for messages. The key is valid only during the call.
func EachField(obj []byte, fn func(key, val []byte) error) error {
	w, err := newWalker(obj, '{')
	if err != nil {
		return err
	}
	defer w.put()
	return w.fields(fn)
}

// EachRawField is EachField giving each name as it is written: a JSON
// string literal, quotes and escapes included, for a caller that decodes
// it with DecodeString and refuses a name that does not survive decoding.
func EachRawField(obj []byte, fn func(name, val []byte) error) error {
	w, err := newWalker(obj, '{')
	if err != nil {
		return err
	}
	defer w.put()
	return w.walkFields(true, fn)
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
	return unquote(bytes.TrimRight(val[SkipSpace(val, 0):], " \t\r\n"))
}

// errNotUTF8 is the reason of a string that does not survive decoding.
var errNotUTF8 = errors.New("not valid UTF-8 (invalid bytes or an unpaired surrogate escape)")

// unquote decodes a JSON string literal, refusing what would not survive.
func unquote(lit []byte) (string, error) {
	b, err := appendUnquote(nil, lit)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// unquote is unquote into the walker's scratch buffer, valid until the
// next call; a literal without escapes is returned as a part of it.
func (w *walker) unquote(lit []byte) ([]byte, error) {
	b, err := appendUnquote(w.scratch[:0], lit)
	if err == nil && bytes.IndexByte(lit, '\\') >= 0 {
		w.scratch = b[:0] // keep what it grew to
	}
	return b, err
}

// appendUnquote appends the decoded literal to dst, refusing invalid UTF-8
// and unpaired surrogate escapes (jsontext refuses them); a literal without
// escapes is returned as a part of lit, dst untouched.
func appendUnquote(dst, lit []byte) ([]byte, error) {
	if len(lit) >= 2 && bytes.IndexByte(lit, '\\') < 0 {
		if !utf8.Valid(lit) {
			return nil, errNotUTF8
		}
		return lit[1 : len(lit)-1], nil
	}
	out, err := jsontext.AppendUnquote(dst, lit)
	if err != nil {
		return nil, errNotUTF8
	}
	return out, nil
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

// Compact returns a well-formed JSON value without whitespace outside its
// strings, key order and escapes kept: val itself when it holds no
// whitespace byte at all, else a compacted copy.
func Compact(val []byte) []byte {
	if !bytes.ContainsAny(val, " \t\r\n") {
		return val
	}
	v := jsontext.Value(bytes.Clone(val))
	if err := v.Compact(); err != nil {
		return val // not well-formed: callers check first
	}
	return v
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
