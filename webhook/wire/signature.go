package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultTolerance is how far a signature's timestamp may be from the
// receiver's clock in Verify, either way, when the tolerance given is zero.
const DefaultTolerance = 5 * time.Minute

// DefaultMaxRequestBytes is how much of a request's body VerifyRequest
// reads when given no limit (64 MiB).
const DefaultMaxRequestBytes int64 = 64 << 20

// Errors of Verify and VerifyRequest, for errors.Is.
var (
	// ErrNoSignature: the request carries no Orderly-Signature header.
	ErrNoSignature = errors.New("wire: no " + SignatureHeader + " header")
	// ErrBadSignature: the header is malformed, or no v1 signature in it
	// matches the body under the secret.
	ErrBadSignature = errors.New("wire: bad signature")
	// ErrSignatureExpired: the signature matches but its timestamp is
	// further from now than the tolerance (a replayed or delayed request,
	// or clocks apart).
	ErrSignatureExpired = errors.New("wire: signature timestamp outside the tolerance")
	// ErrEmptySecret: Verify or VerifyRequest was given an empty secret,
	// under which anyone can sign: a receiver's configuration mistake, so
	// every request is refused.
	ErrEmptySecret = errors.New("wire: the secret is empty; refusing every signature")
)

// Sign returns the value of the Orderly-Signature header for body sent at
// t under secret.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// mac is the HMAC-SHA256 of "<ts>.<body>" under secret.
func mac(secret []byte, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks header, the value of an Orderly-Signature header, against
// body and secret: one of its v1 signatures must match, and its timestamp
// must be within tolerance of now, either way (DefaultTolerance when
// tolerance is zero; a negative tolerance turns the check off). It returns
// nil, or an error wrapping ErrNoSignature, ErrBadSignature,
// ErrSignatureExpired or ErrEmptySecret (an empty secret verifies
// nothing). The comparison takes constant time.
//
// Several v1 values may appear (t=...,v1=a,v1=b): a receiver given two
// secrets during a rotation may call Verify with each.
func Verify(header string, body, secret []byte, tolerance time.Duration, now time.Time) error {
	if len(secret) == 0 {
		return ErrEmptySecret
	}
	if strings.TrimSpace(header) == "" {
		return ErrNoSignature
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: %q is not key=value", ErrBadSignature, truncate(part))
		}
		switch k {
		case "t":
			if ts != "" {
				return fmt.Errorf("%w: two timestamps", ErrBadSignature)
			}
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return fmt.Errorf("%w: v1 is not a hex SHA-256 HMAC", ErrBadSignature)
			}
			sigs = append(sigs, sig)
		}
		// Other keys are for schemes to come; ignored.
	}
	if ts == "" {
		return fmt.Errorf("%w: no timestamp (t=)", ErrBadSignature)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: the timestamp is not an integer", ErrBadSignature)
	}
	if len(sigs) == 0 {
		return fmt.Errorf("%w: no v1 signature", ErrBadSignature)
	}
	want := mac(secret, ts, body)
	matched := false
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("%w: no v1 signature matches the body", ErrBadSignature)
	}
	return checkAge(unix, tolerance, now)
}

// VerifyRequest reads r's body (at most maxBytes of it;
// DefaultMaxRequestBytes when maxBytes is zero), verifies its signature
// against secret at the current time, and returns the body. It verifies
// either scheme, by the header the request carries: Orderly-Signature with
// Verify, else the Standard Webhooks headers with VerifyStandard (for
// which secret may be the "whsec_<base64>" string, or the key StandardKey
// returns). On success, r.Body is replaced by a reader of the same bytes,
// so that the request can be decoded as usual. A body larger than maxBytes
// is an error, and so is an empty secret (ErrEmptySecret), before the body
// is read. VerifyRequestKeys takes several secrets, for a rotation.
func VerifyRequest(r *http.Request, secret []byte, tolerance time.Duration, maxBytes int64) ([]byte, error) {
	return VerifyRequestKeys(r, [][]byte{secret}, tolerance, maxBytes)
}

// truncate shortens a piece of a header for an error.
func truncate(s string) string {
	const n = 32
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
