package wire

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of the Standard Webhooks scheme (https://www.standardwebhooks.com),
// which a queue chooses with handler.signature: standard (SchemeStandard).
const (
	// StandardIDHeader carries the message id: the delivery's name
	// (DeliveryHeader) for a delivery, a name unique to the report for a
	// retries-exhausted report. It is part of what is signed.
	StandardIDHeader = "Webhook-Id"
	// StandardTimestampHeader carries the time of sending, in unix seconds.
	StandardTimestampHeader = "Webhook-Timestamp"
	// StandardSignatureHeader carries one or more signatures, separated by
	// spaces, each "v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">".
	StandardSignatureHeader = "Webhook-Signature"
)

// Signature schemes of a queue (webhook.Config.Scheme, handler.signature in
// the configuration file).
const (
	// SchemeOrderly is Orderly's own scheme: the Orderly-Signature header
	// (Sign, Verify). The default.
	SchemeOrderly = "orderly"
	// SchemeStandard is Standard Webhooks: the Webhook-Id,
	// Webhook-Timestamp and Webhook-Signature headers (SignStandard,
	// VerifyStandard), which the Standard Webhooks libraries of every
	// language verify.
	SchemeStandard = "standard"
)

// StandardSecretPrefix starts a Standard Webhooks secret: "whsec_" and the
// key in base64.
const StandardSecretPrefix = "whsec_"

// ErrBadSecret: a Standard Webhooks secret is not "whsec_" and a base64 key.
var ErrBadSecret = errors.New("wire: a Standard Webhooks secret is " + StandardSecretPrefix + " and a base64 key")

// StandardKey returns the HMAC key of a Standard Webhooks secret: the bytes
// that the base64 after "whsec_" encodes. A secret without the prefix is
// taken as base64 too, as the Standard Webhooks libraries do. Padding may
// be left out.
func StandardKey(secret string) ([]byte, error) {
	b64 := strings.TrimPrefix(secret, StandardSecretPrefix)
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(b64, "="))
	}
	if err != nil || len(key) == 0 {
		return nil, ErrBadSecret
	}
	return key, nil
}

// standardKeyOf returns the key VerifyRequest uses for the standard scheme
// given a receiver's secret: the decoded key when the secret is
// "whsec_<base64>", else the secret's bytes themselves (a key already
// decoded with StandardKey).
func standardKeyOf(secret []byte) []byte {
	if bytes.HasPrefix(secret, []byte(StandardSecretPrefix)) {
		if key, err := StandardKey(string(secret)); err == nil {
			return key
		}
	}
	return secret
}

// SignStandard returns the value of the Webhook-Signature header for body
// sent at t with message id under key (StandardKey's bytes):
// "v1," and the base64 HMAC-SHA256 of "<id>.<unix seconds>.<body>".
func SignStandard(key []byte, id string, t time.Time, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(standardMAC(key, id, strconv.FormatInt(t.Unix(), 10), body))
}

// standardMAC is the HMAC-SHA256 of "<id>.<ts>.<body>" under key.
func standardMAC(key []byte, id, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// VerifyStandard checks a Standard Webhooks signature: id, timestamp and
// signature are the values of the Webhook-Id, Webhook-Timestamp and
// Webhook-Signature headers, key the HMAC key (StandardKey's bytes). One
// of the space-separated v1 signatures must match (other versions, such as
// v1a, are skipped), and the timestamp must be within tolerance of now,
// either way (DefaultTolerance when tolerance is zero; a negative
// tolerance turns the check off). It returns nil, or an error wrapping
// ErrNoSignature (no signature header), ErrBadSignature,
// ErrSignatureExpired or ErrEmptySecret. The comparison takes constant
// time.
func VerifyStandard(id, timestamp, signature string, body, key []byte, tolerance time.Duration, now time.Time) error {
	if len(key) == 0 {
		return ErrEmptySecret
	}
	if strings.TrimSpace(signature) == "" {
		return fmt.Errorf("%w (%s)", ErrNoSignature, StandardSignatureHeader)
	}
	if id == "" {
		return fmt.Errorf("%w: no %s", ErrBadSignature, StandardIDHeader)
	}
	unix, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not an integer", ErrBadSignature, StandardTimestampHeader)
	}
	want := standardMAC(key, id, timestamp, body)
	matched := false
	for _, part := range strings.Fields(signature) {
		version, b64, ok := strings.Cut(part, ",")
		if !ok || version != "v1" {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(sig, want) {
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("%w: no v1 signature matches the body", ErrBadSignature)
	}
	return checkAge(unix, tolerance, now)
}

// checkAge returns ErrSignatureExpired when unix is further from now than
// tolerance (DefaultTolerance when zero; no check when negative).
func checkAge(unix int64, tolerance time.Duration, now time.Time) error {
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	if tolerance < 0 {
		return nil
	}
	age := now.Sub(time.Unix(unix, 0))
	if age > tolerance || age < -tolerance {
		return fmt.Errorf("%w: signed at %s, %s from now (tolerance %s)",
			ErrSignatureExpired, time.Unix(unix, 0).UTC().Format(time.RFC3339), age.Round(time.Second), tolerance)
	}
	return nil
}

// verifyHeader verifies h's signature of body under secret, by the scheme
// whose header h carries: Orderly-Signature first, else Webhook-Signature.
// For the standard scheme the secret may be "whsec_<base64>" or the key.
func verifyHeader(h http.Header, body, secret []byte, tolerance time.Duration, now time.Time) error {
	if v := h.Get(SignatureHeader); v != "" || h.Get(StandardSignatureHeader) == "" {
		return Verify(v, body, secret, tolerance, now)
	}
	return VerifyStandard(h.Get(StandardIDHeader), h.Get(StandardTimestampHeader), h.Get(StandardSignatureHeader),
		body, standardKeyOf(secret), tolerance, now)
}

// VerifyRequestKeys is VerifyRequest with several secrets, for a key
// rotation: the request is accepted when its signature verifies under any
// of them (the body is read once). It returns the first secret's error
// when none verifies, and ErrEmptySecret when secrets is empty or holds an
// empty one.
func VerifyRequestKeys(r *http.Request, secrets [][]byte, tolerance time.Duration, maxBytes int64) ([]byte, error) {
	if len(secrets) == 0 {
		return nil, ErrEmptySecret
	}
	for _, s := range secrets {
		if len(s) == 0 {
			return nil, ErrEmptySecret
		}
	}
	body, err := readBody(r, maxBytes)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var first error
	for _, s := range secrets {
		err := verifyHeader(r.Header, body, s, tolerance, now)
		if err == nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			return body, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// readBody reads r's body, at most maxBytes of it (DefaultMaxRequestBytes
// when zero); more is an error.
func readBody(r *http.Request, maxBytes int64) ([]byte, error) {
	if maxBytes == 0 {
		maxBytes = DefaultMaxRequestBytes
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("wire: reading the request body: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("wire: the request body is larger than %d bytes", maxBytes)
	}
	return body, nil
}
