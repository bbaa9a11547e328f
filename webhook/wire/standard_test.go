package wire

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The published Standard Webhooks test vector, from
// github.com/standard-webhooks/standard-webhooks (commit b2fa7b87),
// libraries/python/tests/test_webhooks.py test_sign_function and
// libraries/javascript/src/webhook.test.ts "test sign function"; the
// invalid signature is from libraries/go/webhook_test.go ("invalid
// signature is invalid").
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	vectorInvalid   = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

func TestStandardPublishedVector(t *testing.T) {
	t.Parallel()
	key, err := StandardKey(vectorSecret)
	require.NoError(t, err)
	at := time.Unix(vectorTimestamp, 0)
	require.Equal(t, vectorSignature, SignStandard(key, vectorMsgID, at, []byte(vectorPayload)))

	require.NoError(t, VerifyStandard(vectorMsgID, "1614265330", vectorSignature, []byte(vectorPayload), key, time.Minute, at))
	require.ErrorIs(t, VerifyStandard(vectorMsgID, "1614265330", vectorInvalid, []byte(vectorPayload), key, time.Minute, at), ErrBadSignature)
	// Several signatures, space-separated (a sender's key rotation): any v1
	// may match; other versions are skipped.
	several := vectorInvalid + " v1a,aGVsbG8= " + vectorSignature + " " + vectorInvalid
	require.NoError(t, VerifyStandard(vectorMsgID, "1614265330", several, []byte(vectorPayload), key, time.Minute, at))
	// The secret without its prefix, and without padding, is the same key
	// (as the libraries' tests check).
	for _, s := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr=="} {
		k, err := StandardKey(s)
		require.NoError(t, err, s)
		if !strings.HasSuffix(strings.TrimRight(s, "="), "Br") {
			require.Equal(t, key, k)
		}
	}
	for _, bad := range []string{"", "whsec_", "whsec_!!!"} {
		_, err := StandardKey(bad)
		require.ErrorIs(t, err, ErrBadSecret, bad)
	}
}

func TestVerifyStandard(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	body := []byte(`{"queue":"q","shard":0,"jobs":[]}`)
	at := time.Unix(1_700_000_000, 0)
	sig := SignStandard(key, "q/0/1/7", at, body)
	ts := "1700000000"

	require.NoError(t, VerifyStandard("q/0/1/7", ts, sig, body, key, time.Minute, at.Add(30*time.Second)))
	require.NoError(t, VerifyStandard("q/0/1/7", ts, sig, body, key, -1, at.Add(1000*time.Hour)), "a negative tolerance turns the check off")
	require.ErrorIs(t, VerifyStandard("q/0/1/7", ts, sig, body, key, time.Minute, at.Add(2*time.Minute)), ErrSignatureExpired)
	require.ErrorIs(t, VerifyStandard("q/0/1/7", ts, sig, body, key, time.Minute, at.Add(-2*time.Minute)), ErrSignatureExpired)
	require.ErrorIs(t, VerifyStandard("q/0/1/7", ts, "", body, key, 0, at), ErrNoSignature)
	require.ErrorIs(t, VerifyStandard("q/0/1/7", ts, sig, body, nil, 0, at), ErrEmptySecret)
	require.ErrorIs(t, VerifyStandard("q/0/1/8", ts, sig, body, key, 0, at), ErrBadSignature, "the id is signed")
	require.ErrorIs(t, VerifyStandard("q/0/1/7", "1700000001", sig, body, key, 0, at), ErrBadSignature, "the timestamp is signed")
	require.ErrorIs(t, VerifyStandard("q/0/1/7", ts, sig, append(bytes.Clone(body), ' '), key, 0, at), ErrBadSignature, "the body changed")
	require.ErrorIs(t, VerifyStandard("", ts, sig, body, key, 0, at), ErrBadSignature, "no id")
	require.ErrorIs(t, VerifyStandard("q/0/1/7", "", sig, body, key, 0, at), ErrBadSignature, "no timestamp")
	for _, bad := range []string{"v1,", "v1", "garbage", "v2," + strings.TrimPrefix(sig, "v1,"), "v1,!!!"} {
		require.ErrorIs(t, VerifyStandard("q/0/1/7", ts, bad, body, key, 0, at), ErrBadSignature, bad)
	}
}

// VerifyRequest verifies either scheme, by the headers the request carries;
// VerifyRequestKeys takes several secrets for a rotation, of either scheme.
func TestVerifyRequestBothSchemes(t *testing.T) {
	t.Parallel()
	body := []byte(`{"queue":"q","shard":0,"jobs":[]}`)
	secret := []byte("whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3")
	key, err := StandardKey(string(secret))
	require.NoError(t, err)
	now := time.Now()
	standard := func(key []byte) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("webhook-id", "q/0/1/1")
		r.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		r.Header.Set("webhook-signature", SignStandard(key, "q/0/1/1", now, body))
		return r
	}
	orderly := func(secret []byte) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set(SignatureHeader, Sign(secret, now, body))
		return r
	}

	for _, s := range [][]byte{secret, key} { // the whsec_ string or the key
		got, err := VerifyRequest(standard(key), s, 0, 0)
		require.NoError(t, err)
		require.Equal(t, body, got)
	}
	_, err = VerifyRequest(standard([]byte("another key of 24 bytes!")), secret, 0, 0)
	require.ErrorIs(t, err, ErrBadSignature)
	got, err := VerifyRequest(orderly([]byte("s3cr3t")), []byte("s3cr3t"), 0, 0)
	require.NoError(t, err)
	require.Equal(t, body, got)
	_, err = VerifyRequest(httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)), secret, 0, 0)
	require.ErrorIs(t, err, ErrNoSignature)

	// Rotation: the old and the new secret both verify, one read of the body.
	keys := [][]byte{[]byte("new"), []byte("old")}
	for _, k := range keys {
		got, err := VerifyRequestKeys(orderly(k), keys, 0, 0)
		require.NoError(t, err)
		require.Equal(t, body, got)
		got, err = VerifyRequestKeys(standard(k), keys, 0, 0)
		require.NoError(t, err)
		require.Equal(t, body, got)
	}
	_, err = VerifyRequestKeys(orderly([]byte("gone")), keys, 0, 0)
	require.ErrorIs(t, err, ErrBadSignature)
	_, err = VerifyRequestKeys(orderly([]byte("new")), nil, 0, 0)
	require.ErrorIs(t, err, ErrEmptySecret)
	_, err = VerifyRequestKeys(orderly([]byte("new")), [][]byte{[]byte("new"), nil}, 0, 0)
	require.ErrorIs(t, err, ErrEmptySecret)
}
