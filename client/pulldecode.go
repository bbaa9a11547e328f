package client

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The leases a PullWorker gets are decoded in one pass: encoding/json,
// decoding a PullLease, would check the body, then check and decode each
// job again on its own (wire.Job.UnmarshalJSON), which costs a pull worker
// more than all else it does for a blank job. A lease in the node's shape
// takes the fast path of leasedecode.go; any other is decoded by
// encoding/json, with the same result.

// decodeLease decodes a lease as json.Unmarshal into a PullLease does.
func decodeLease(b []byte) (*PullLease, error) {
	if l, err := decodeLeaseFast(b); err == nil {
		return l, nil
	}
	l := new(PullLease)
	if err := json.Unmarshal(b, l); err != nil {
		return nil, err
	}
	return l, nil
}

// decodeNext decodes an answer's body for its "next" lease, as
// json.Unmarshal into struct{ Next *PullLease } does.
func decodeNext(b []byte) (*PullLease, error) {
	if v, ok := nextValue(b); ok {
		if l, err := decodeLease(v); err == nil {
			return l, nil
		}
	}
	var ok struct {
		Next *PullLease `json:"next"`
	}
	if err := json.Unmarshal(b, &ok); err != nil {
		return nil, fmt.Errorf("decoding an answer's next lease: %w", err)
	}
	return ok.Next, nil
}

// nextValue returns the value of an answer's "next" member when it is its
// last member and a lease object; false otherwise.
func nextValue(b []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		if t != "next" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil, false
			}
			continue
		}
		v := bytes.TrimSpace(b[dec.InputOffset():])
		v, ok := bytes.CutPrefix(v, []byte(":"))
		if !ok {
			return nil, false
		}
		v, ok = bytes.CutSuffix(bytes.TrimSpace(v), []byte("}"))
		v = bytes.TrimSpace(v)
		if !ok || len(v) == 0 || v[0] != '{' {
			return nil, false // null, or not the last member
		}
		return v, true
	}
	return nil, false
}
