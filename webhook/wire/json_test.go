package wire

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The node writes strings and numbers itself; they must be byte for byte
// what encoding/json writes, which receivers and signatures saw before.
var (
	encodeStrings = []string{"", "a", "order-1", "emails", `quo"te`, `back\\slash`, "<b>&amp;", "tab\tnew\nline\r",
		"\x00\x1f\x7f", "héllo", "日本", "\u2028\u2029", "bad\xffutf8", "\xed\xa0\x80"}
	encodeNumbers = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e21, -1e21,
		123456789.123, 1795680448.76, -1795680448.123456, math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-300}
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range encodeStrings {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendString([]byte("x"), s))[1:], "%q", s)
	}
}

func TestAppendNumberMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, f := range encodeNumbers {
		want, err := json.Marshal(f)
		require.NoError(t, err)
		got, err := appendNumber(nil, f)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%v", f)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := appendNumber(nil, f)
		require.Error(t, err, "%v", f)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range encodeStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func FuzzAppendNumber(f *testing.F) {
	for _, n := range encodeNumbers {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n float64) {
		want, werr := json.Marshal(n)
		got, err := appendNumber(nil, n)
		if (err != nil) != (werr != nil) || string(got) != string(want) {
			t.Fatalf("appendNumber(%v) = %s, %v; want %s, %v", n, got, err, want, werr)
		}
	})
}
