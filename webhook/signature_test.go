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
	"github.com/orderlyhq/orderly/webhook/wire"
)

// The sender's pooled signature is wire.Sign's.
func TestSignMatchesWire(t *testing.T) {
	t.Parallel()
	s := newTestSender(t, &Config{URL: "http://127.0.0.1:9/", Secret: []byte("s3cr3t")})
	at := time.Unix(1_700_000_000, 0)
	for _, body := range []string{"", `{"queue":"q"}`, "\x00\xff"} {
		require.Equal(t, wire.Sign([]byte("s3cr3t"), at, []byte(body)), s.sign(at, []byte(body)))
		require.Equal(t, wire.Sign([]byte("s3cr3t"), at, []byte(body)), s.sign(at, []byte(body)), "a pooled HMAC is reset")
	}
	// The standard scheme's is wire.SignStandard's: the published vector.
	key, err := wire.StandardKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	s = newTestSender(t, &Config{URL: "http://127.0.0.1:9/", Secret: key, Scheme: wire.SchemeStandard})
	for range 2 {
		require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
			s.signStandard("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`)))
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
		body, err := wire.VerifyRequest(r, secret, time.Minute, 0)
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
	b := &orderly.Batch{Queue: "q", Delivery: "q/0/1/1", Jobs: []orderly.Job{{ID: "a", RetryCount: -1, Payloads: []orderly.Payload{{Data: []byte(`{}`), Score: 1}}}}}

	// Signed: the receiver verifies it; a forged header from Config.Header
	// is replaced.
	s := newTestSender(t, &Config{URL: srv.URL, Secret: secret,
		Header: http.Header{wire.SignatureHeader: {"t=1,v1=00"}, "X-Team": {"billing"}}})
	require.NoError(t, s.Handle(context.Background(), b))
	seenBy := <-got
	require.NoError(t, seenBy.err)
	require.Equal(t, "billing", seenBy.header.Get("X-Team"))
	require.Len(t, seenBy.header.Values(wire.SignatureHeader), 1)
	want, _ := requestOf(b).MarshalJSON()
	require.Equal(t, want, seenBy.body)

	// Through net/http alike.
	s = newTestSender(t, &Config{URL: srv.URL, Secret: secret, NetHTTP: true})
	require.NoError(t, s.Handle(context.Background(), b))
	require.NoError(t, (<-got).err)

	// Unsigned: no header, even a configured one, and the receiver says so.
	s = newTestSender(t, &Config{URL: srv.URL, Header: http.Header{wire.SignatureHeader: {"t=1,v1=00"}}})
	require.NoError(t, s.Handle(context.Background(), b))
	seenBy = <-got
	require.ErrorIs(t, seenBy.err, wire.ErrNoSignature)
	require.Empty(t, seenBy.header.Values(wire.SignatureHeader))

	// Signed under another secret.
	s = newTestSender(t, &Config{URL: srv.URL, Secret: []byte("wrong")})
	require.NoError(t, s.Handle(context.Background(), b))
	require.ErrorIs(t, (<-got).err, wire.ErrBadSignature)
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

// With the standard scheme the sender signs each request with the Standard
// Webhooks headers, through either client; the receiver verifies them
// with the whsec_ secret; a configured Webhook-* header is replaced; the
// id of a delivery is its name, a retries-exhausted report has its own,
// the same for its attempts.
func TestSenderSignsStandard(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	key, err := wire.StandardKey(secret)
	require.NoError(t, err)
	type seen struct {
		header http.Header
		err    error
	}
	got := make(chan seen, 8)
	fail := make(chan bool, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		_, err := wire.VerifyRequest(r, []byte(secret), time.Minute, 0)
		got <- seen{h, err}
		select {
		case <-fail:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	b := &orderly.Batch{Queue: "q", Delivery: "q/0/1/1", Jobs: []orderly.Job{{ID: "a", RetryCount: -1, Payloads: []orderly.Payload{{Data: []byte(`{}`), Score: 1}}}}}

	for _, netHTTP := range []bool{false, true} {
		s := newTestSender(t, &Config{URL: srv.URL, Secret: key, Scheme: wire.SchemeStandard, NetHTTP: netHTTP,
			Header: http.Header{"Webhook-Signature": {"v1,forged"}, "Webhook-Id": {"x"}}})
		require.NoError(t, s.Handle(context.Background(), b))
		seenBy := <-got
		require.NoError(t, seenBy.err, "net/http %v", netHTTP)
		require.Equal(t, []string{"q/0/1/1"}, seenBy.header.Values("Webhook-Id"))
		require.Len(t, seenBy.header.Values("Webhook-Signature"), 1)
		require.Empty(t, seenBy.header.Values(wire.SignatureHeader), "one scheme only")

		fail <- true
		require.NoError(t, s.ReportDead(context.Background(), "q", 0, b.Jobs))
		first, second := <-got, <-got
		require.NoError(t, first.err)
		require.NoError(t, second.err)
		id := first.header.Get("Webhook-Id")
		require.True(t, strings.HasPrefix(id, "q/0/retries_exhausted/"), id)
		require.Equal(t, id, second.header.Get("Webhook-Id"), "the attempts of one report share its id")
		require.NoError(t, s.ReportDead(context.Background(), "q", 0, b.Jobs))
		require.NotEqual(t, id, (<-got).header.Get("Webhook-Id"), "another report, another id")
	}

	// Another key: the receiver refuses it.
	s := newTestSender(t, &Config{URL: srv.URL, Secret: []byte("another key of 24 bytes!"), Scheme: wire.SchemeStandard})
	require.NoError(t, s.Handle(context.Background(), b))
	require.ErrorIs(t, (<-got).err, wire.ErrBadSignature)

	_, err = New(&Config{URL: srv.URL, Secret: key, Scheme: "svix"})
	require.ErrorContains(t, err, "scheme")
}
