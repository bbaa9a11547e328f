package webhook

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
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

func TestSenderSignsRequests(t *testing.T) {
	t.Parallel()
	secret := []byte("webhook-secret")
	type seen struct {
		header http.Header
		body   []byte
		err    error
	}
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		body, err := VerifyRequest(r, secret, time.Minute, 0)
		if err == nil {
			again, _ := io.ReadAll(r.Body)
			if !bytes.Equal(again, body) {
				panic("VerifyRequest must leave the body readable")
			}
		}
		got <- seen{h, body, err}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	b := &orderly.Batch{Queue: "q", Delivery: "q/0/1/1", Jobs: []orderly.Job{{ID: "a", RetryCount: -1, Payloads: []orderly.Payload{{Data: []byte(`{}`), Score: 1}}}}}

	// Signed: the receiver verifies it; a forged header from Config.Header
	// is replaced.
	h, err := New(&Config{URL: srv.URL, Client: srv.Client(), Secret: secret,
		Header: http.Header{SignatureHeader: {"t=1,v1=00"}, "X-Team": {"billing"}}})
	require.NoError(t, err)
	require.NoError(t, h(context.Background(), b))
	s := <-got
	require.NoError(t, s.err)
	require.Equal(t, "billing", s.header.Get("X-Team"))
	require.Len(t, s.header.Values(SignatureHeader), 1)
	want, _ := requestOf(b).MarshalJSON()
	require.Equal(t, want, s.body)

	// Unsigned: no header, even a configured one, and the receiver says so.
	h, err = New(&Config{URL: srv.URL, Client: srv.Client(), Header: http.Header{SignatureHeader: {"t=1,v1=00"}}})
	require.NoError(t, err)
	require.NoError(t, h(context.Background(), b))
	s = <-got
	require.ErrorIs(t, s.err, ErrNoSignature)
	require.Empty(t, s.header.Values(SignatureHeader))

	// Signed under another secret.
	h, err = New(&Config{URL: srv.URL, Client: srv.Client(), Secret: []byte("wrong")})
	require.NoError(t, err)
	require.NoError(t, h(context.Background(), b))
	require.ErrorIs(t, (<-got).err, ErrBadSignature)
}

func TestVerifyRequestBodyLimit(t *testing.T) {
	t.Parallel()
	body := []byte(strings.Repeat("x", 100))
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set(SignatureHeader, Sign([]byte("k"), time.Now(), body))
	_, err := VerifyRequest(r, []byte("k"), 0, 99)
	require.ErrorContains(t, err, "larger than 99 bytes")
}

func TestCheckHeaderName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"Authorization", "X-Team", "x-api-key"} {
		require.NoError(t, CheckHeaderName(ok), ok)
	}
	for _, bad := range []string{"", "Orderly-Signature", "orderly-delivery", "Orderly-Anything", "Content-Type",
		"content-length", "Host", "User-Agent", "Transfer-Encoding", "Connection", "bad name", "x:y", "é"} {
		require.Error(t, CheckHeaderName(bad), bad)
	}
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
