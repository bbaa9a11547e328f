package wire

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSignKnownVector(t *testing.T) {
	t.Parallel()
	// printf '1700000000.{"queue":"q"}' | openssl dgst -sha256 -hmac s3cr3t
	got := Sign([]byte("s3cr3t"), time.Unix(1_700_000_000, 0), []byte(`{"queue":"q"}`))
	require.Equal(t, "t=1700000000,v1=a704e676c02c0526cee4396850c1c63a442dc80707ccdf632f9a6a343b512174", got)
}

func TestVerify(t *testing.T) {
	t.Parallel()
	secret := []byte("k")
	body := []byte(`{"queue":"q","shard":0,"jobs":[]}`)
	at := time.Unix(1_700_000_000, 0)
	header := Sign(secret, at, body)

	require.NoError(t, Verify(header, body, secret, time.Minute, at.Add(30*time.Second)))
	require.NoError(t, Verify(header, body, secret, time.Minute, at.Add(-30*time.Second)), "a receiver's clock may be behind")
	require.NoError(t, Verify(header, body, secret, -1, at.Add(1000*time.Hour)), "a negative tolerance turns the check off")
	require.NoError(t, Verify(header, body, secret, 0, at.Add(DefaultTolerance)), "zero means the default")
	require.ErrorIs(t, Verify(header, body, secret, 0, at.Add(DefaultTolerance+time.Second)), ErrSignatureExpired)
	require.ErrorIs(t, Verify(header, body, secret, time.Minute, at.Add(2*time.Minute)), ErrSignatureExpired)
	require.ErrorIs(t, Verify(header, body, secret, time.Minute, at.Add(-2*time.Minute)), ErrSignatureExpired)

	require.ErrorIs(t, Verify("", body, secret, 0, at), ErrNoSignature)
	require.ErrorIs(t, Verify(header, append(bytes.Clone(body), ' '), secret, 0, at), ErrBadSignature, "the body changed")
	require.ErrorIs(t, Verify(header, body, []byte("other"), 0, at), ErrBadSignature, "another secret")
	other := Sign([]byte("other"), at, body)
	rotated := header + "," + strings.Split(other, ",")[1]
	require.NoError(t, Verify(rotated, body, []byte("other"), 0, at), "any v1 may match")

	// A signature for one time does not verify under another.
	v1 := strings.Split(header, ",")[1]
	require.ErrorIs(t, Verify("t=1700000001,"+v1, body, secret, 0, at), ErrBadSignature)

	for _, bad := range []string{
		"garbage", "t=1700000000", "v1=" + strings.TrimPrefix(v1, "v1="), "t=x," + v1,
		"t=1700000000,v1=zz", "t=1700000000,v1=abcd", "t=1,t=2," + v1,
	} {
		require.ErrorIs(t, Verify(bad, body, secret, 0, at), ErrBadSignature, bad)
	}
}

// An empty secret verifies nothing: anyone can compute the HMAC under it,
// so a receiver whose secret is missing from its configuration refuses
// every request instead of accepting forged ones.
func TestVerifyRefusesAnEmptySecret(t *testing.T) {
	t.Parallel()
	body := []byte(`{"queue":"q","shard":0,"jobs":[]}`)
	at := time.Unix(1_700_000_000, 0)
	for _, secret := range [][]byte{nil, {}} {
		forged := Sign(secret, at, body) // what anyone can compute
		require.ErrorIs(t, Verify(forged, body, secret, 0, at), ErrEmptySecret)
		require.ErrorIs(t, Verify(forged, body, secret, -1, at), ErrEmptySecret)

		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set(SignatureHeader, forged)
		got, err := VerifyRequest(r, secret, 0, 0)
		require.ErrorIs(t, err, ErrEmptySecret)
		require.Nil(t, got)
	}
}

func TestVerifyRequest(t *testing.T) {
	t.Parallel()
	secret := []byte("k")
	body := []byte(strings.Repeat("x", 100))
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set(SignatureHeader, Sign(secret, time.Now(), body))
	got, err := VerifyRequest(r, secret, 0, 0)
	require.NoError(t, err)
	require.Equal(t, body, got)
	again, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	require.Equal(t, body, again, "the body stays readable")

	r = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set(SignatureHeader, Sign(secret, time.Now(), body))
	_, err = VerifyRequest(r, secret, 0, 99)
	require.ErrorContains(t, err, "larger than 99 bytes")

	r = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	_, err = VerifyRequest(r, secret, 0, 0)
	require.ErrorIs(t, err, ErrNoSignature)
}

// BenchmarkSign measures the cost of signing one request of 64 KiB.
func BenchmarkSign(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 64<<10)
	secret := []byte("s3cr3t")
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_ = Sign(secret, time.Unix(1_700_000_000, 0), body)
	}
}
