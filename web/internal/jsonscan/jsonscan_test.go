package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

type field struct{ key, val string }

func fieldsOf(t testing.TB, obj string) []field {
	var out []field
	require.NoError(t, EachField([]byte(obj), func(key, val []byte) error {
		out = append(out, field{string(key), string(val)})
		return nil
	}))
	return out
}

// Fields come in order, repeated and in any case, their values as written.
func TestEachField(t *testing.T) {
	t.Parallel()
	require.Equal(t, []field{{"id", `"a"`}, {"ID", `1`}, {"id", `{"x": [1, 2]}`}, {"é", `null`}, {"", `[]`}},
		fieldsOf(t, " {\"id\": \"a\", \"ID\":1 , \"id\" : {\"x\": [1, 2]}, \"\\u00e9\": null, \"\": []} "))
	require.Empty(t, fieldsOf(t, "{}"))
	require.Equal(t, []field{{`\ud800`, `1`}, {"\xff", `2`}}, fieldsOf(t, "{\"\\ud800\": 1, \"\xff\": 2}"),
		"a key that does not survive decoding is given as written")

	stop := errors.New("stop")
	n := 0
	require.ErrorIs(t, EachField([]byte(`{"a":1,"b":2}`), func(_, _ []byte) error { n++; return stop }), stop)
	require.Equal(t, 1, n, "the walk stops at the first error")

	require.Error(t, EachField([]byte(`[1]`), func(_, _ []byte) error { return nil }), "not an object")
	require.Error(t, EachField([]byte(`{"a":}`), func(_, _ []byte) error { return nil }), "malformed")
}

// Values are parts of the body, not copies.
func TestValuesArePartsOfTheBody(t *testing.T) {
	t.Parallel()
	body := []byte(`[{"p": {"a": 1}}, "x"]`)
	err := EachElement(body, func(_ int, val []byte) error {
		i := bytes.Index(body, val)
		require.GreaterOrEqual(t, i, 0)
		require.Same(t, &body[i], &val[0])
		return nil
	})
	require.NoError(t, err)
}

// WalkArray reads the body once: elements in order, objects' fields from
// the same pass, elements left unread skipped; malformed JSON anywhere wins
// over fn's error.
func TestWalkArray(t *testing.T) {
	t.Parallel()
	body := []byte(` [{"a": 1, "b": [2]}, "s", {"c": {}} , 3, {"skipped": true}] `)
	var got []string
	require.NoError(t, WalkArray(body, func(i int, e *Element) error {
		switch e.Kind() {
		case "an object":
			if i == 4 {
				return nil // not read: skipped
			}
			return e.EachField(func(k, v []byte) error {
				got = append(got, fmt.Sprintf("%d.%s=%s", i, k, v))
				return nil
			})
		default:
			v, err := e.Bytes()
			got = append(got, fmt.Sprintf("%d:%s %s", i, e.Kind(), v))
			return err
		}
	}))
	require.Equal(t, []string{`0.a=1`, `0.b=[2]`, `1:a string "s"`, `2.c={}`, `3:a number 3`}, got)

	stop := errors.New("stop")
	calls := 0
	fn := func(i int, e *Element) error {
		calls++
		return e.EachField(func(k, _ []byte) error {
			if string(k) == "bad" {
				return stop
			}
			return nil
		})
	}
	require.ErrorIs(t, WalkArray([]byte(`[{"bad": 1, "x": [1, 2]}, {"y": 1}]`), fn), stop)
	require.Equal(t, 1, calls, "fn is not called after it failed")
	for _, malformed := range []string{
		`[{"bad": 1}, {"y": }]`, // fn's error first, malformed later
		`[{"bad": 1, "x": [1,]}]`,
		`[{"a": 1}] [2]`, // data after the array
		`[{"a": 1}`,
		`[{"a" 1}]`,
	} {
		calls = 0
		require.ErrorIs(t, WalkArray([]byte(malformed), fn), ErrMalformed, malformed)
	}
}

func TestEachElement(t *testing.T) {
	t.Parallel()
	var got []string
	require.NoError(t, EachElement([]byte(" [ 1, \"a\" ,{\"b\": [2]}, [], null ] "), func(i int, val []byte) error {
		require.Equal(t, len(got), i)
		got = append(got, string(val))
		return nil
	}))
	require.Equal(t, []string{`1`, `"a"`, `{"b": [2]}`, `[]`, `null`}, got)
	require.NoError(t, EachElement([]byte(`[]`), func(int, []byte) error { t.Fatal("no element"); return nil }))
	require.Error(t, EachElement([]byte(`{}`), func(int, []byte) error { return nil }), "not an array")
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	for val, want := range map[string]string{
		" {}": "an object", "[1]": "an array", `"s"`: "a string", "true": "a boolean", "false": "a boolean",
		"null": "null", "-1.5": "a number", "0": "a number", "  ": "nothing", "": "nothing",
	} {
		require.Equal(t, want, KindOf([]byte(val)), val)
	}
}

func TestDecodeString(t *testing.T) {
	t.Parallel()
	for val, want := range map[string]string{
		`"plain"`: "plain", `"caf\u00e9"`: "café", `"a\"b\\c\/d\n"`: "a\"b\\c/d\n", `"\ud83d\ude00"`: "😀", `""`: "",
		`"héllo"`: "héllo",
	} {
		got, err := DecodeString([]byte(val))
		require.NoError(t, err, val)
		require.Equal(t, want, got, val)
	}
	for _, val := range []string{`"\ud800"`, `"\udc00x"`, "\"\xff\"", `"\ud800\u0041"`} {
		_, err := DecodeString([]byte(val))
		require.ErrorContains(t, err, "not valid UTF-8", val)
	}
	_, err := DecodeString([]byte(`12`))
	require.EqualError(t, err, "must be a string, got a number")
}

func TestFiniteNumber(t *testing.T) {
	t.Parallel()
	f, err := FiniteNumber([]byte(`-1.5e3`))
	require.NoError(t, err)
	require.Equal(t, -1500.0, f)
	_, err = FiniteNumber([]byte(`1e999`))
	require.ErrorContains(t, err, "must be a finite number")
	_, err = FiniteNumber([]byte(`"1"`))
	require.EqualError(t, err, "must be a number, got a string")
}

func TestCompact(t *testing.T) {
	t.Parallel()
	for val, want := range map[string]string{
		`{"a":1}`:                       `{"a":1}`,
		"{ \"a\" : [ 1 , \"x y\" ] }\n": `{"a":[1,"x y"]}`,
		`"two  spaces"`:                 `"two  spaces"`,
		`{"k":"\u00e9\n"}`:              `{"k":"\u00e9\n"}`,
		"[1,\n\t2]":                     `[1,2]`,
		"{\"bad\": \"\xff\"}":           "{\"bad\":\"\xff\"}",
	} {
		require.Equal(t, want, string(Compact([]byte(val))), val)
	}
	same := []byte(`{"a":1}`)
	require.Same(t, &same[0], &Compact(same)[0], "a compact value is not copied")
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	require.Equal(t, "abc", Truncate("abc", 3))
	require.Equal(t, "ab...", Truncate("abcd", 2))
	require.Equal(t, "a...", Truncate("aé", 2), "cut on a rune boundary")
}

// walkSeeds are bodies for FuzzWalk.
var walkSeeds = []string{
	`[{"id": "order-1", "payload": {"sku": 42}, "score": 1.5}, {"id": "b", "payload_base64": "AP8="}]`,
	`{"ids": ["a", "b"], "all": false}`,
	`{"a":1,"a":2,"A":3}`,
	"{\"\\ud800\": \"\\udc00\", \"\xff\": \"\xfe\"}",
	`{"k": "\u00e9\"\\\/\b\f\n\r\t", "n": -0.5e-3, "t": true, "f": false, "z": null}`,
	"[ [ [ ] ] , { } , \"\" ]",
	`[{"a": 1}] [2]`,
	`[{"a": 1},]`,
	"[\"\xff\", {\"\\ud800\": 1}]",
	`"just a string"`,
	`12`,
	`[]`,
	`{}`,
}

// FuzzWalk checks the walk against encoding/json: WalkArray accepts an
// array exactly when json.Valid does, and on every body json.Valid accepts
// the walk gives the same keys in the same order (those that decode
// without replacement), the same values byte for byte (as json.RawMessage
// holds them), strings decoded alike or refused for what encoding/json
// would replace, and Compact gives what json.Compact gives.
func FuzzWalk(f *testing.F) {
	for _, s := range walkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if KindOf(body) == "an array" {
			err := WalkArray(body, func(i int, e *Element) error {
				if e.Kind() == "an object" {
					return e.EachField(func(_, _ []byte) error { return nil })
				}
				return nil
			})
			require.Equal(t, json.Valid(body), err == nil, "%q: %v", body, err)
		}
		if !json.Valid(body) {
			return
		}
		var want bytes.Buffer
		require.NoError(t, json.Compact(&want, body))
		require.Equal(t, want.String(), string(Compact(body)))
		switch KindOf(body) {
		case "an object":
			checkObject(t, body)
		case "an array":
			var elems []json.RawMessage
			require.NoError(t, json.Unmarshal(body, &elems))
			var got []string
			require.NoError(t, EachElement(body, func(i int, val []byte) error {
				got = append(got, string(val))
				return nil
			}))
			require.Len(t, got, len(elems))
			for i := range elems {
				require.Equal(t, string(elems[i]), got[i])
			}
		case "a string":
			checkString(t, bytes.TrimSpace(body))
		}
	})
}

// checkObject compares EachField with encoding/json's tokens.
func checkObject(t *testing.T, body []byte) {
	dec := json.NewDecoder(bytes.NewReader(body))
	_, err := dec.Token() // {
	require.NoError(t, err)
	require.NoError(t, EachField(body, func(k, val []byte) error {
		key := string(k)
		tok, err := dec.Token()
		require.NoError(t, err)
		var raw json.RawMessage
		require.NoError(t, dec.Decode(&raw))
		if utf8.ValidString(key) && !strings.Contains(tok.(string), "\uFFFD") {
			require.Equal(t, tok.(string), key)
		}
		require.Equal(t, string(raw), string(val))
		if KindOf(val) == "a string" {
			checkString(t, val)
		}
		return nil
	}))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('}'), tok, "as many fields")
	_, err = dec.Token()
	require.ErrorIs(t, err, io.EOF)
}

// checkString compares DecodeString with encoding/json: the same string,
// or a refusal where encoding/json puts U+FFFD for invalid UTF-8 or an
// unpaired surrogate.
func checkString(t *testing.T, lit []byte) {
	var want string
	require.NoError(t, json.Unmarshal(lit, &want))
	got, err := DecodeString(lit)
	if err != nil {
		require.Contains(t, want, "\uFFFD", "%q refused, but encoding/json decodes it cleanly", lit)
		return
	}
	require.Equal(t, want, got)
}
