package apiv1

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// State is an id's state in a stateful queue (docs/contract.md §11), as GET
// /api/v1/queues/{q}/state/{id} and the job lookup show it:
//
//	{"state": {"count": 3}, "version": 7}
//	{"state_base64": "AP8=", "version": 7}
//	{"state": null, "version": 0}          (no state)
//	{"state": null, "version": 8, "deleted": true}  (deleted at version 8)
//
// A deleted state keeps its version (a tombstone, docs/contract.md §11), so
// a compare-and-set holding a version from before the delete fails.
// The bytes appear under "state" when they are a compact JSON value (as
// IsJSONPayload decides for payloads), else as base64 under "state_base64".
type State struct {
	Data    []byte
	Version int64
	// Deleted: the state was deleted at Version; Data is nil.
	Deleted bool
}

// MarshalJSON implements json.Marshaler.
func (s State) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(s.Data)*4/3+48)
	switch {
	case s.Version == 0 || s.Deleted:
		b = append(b, `{"state":null`...)
	case IsJSONPayload(s.Data):
		b = append(b, `{"state":`...)
		b = append(b, s.Data...)
	default:
		b = append(b, `{"state_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, s.Data)
		b = append(b, '"')
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, s.Version, 10)
	if s.Deleted && s.Version != 0 {
		b = append(b, `,"deleted":true`...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON implements json.Unmarshaler; it reads what MarshalJSON
// writes.
func (s *State) UnmarshalJSON(b []byte) error {
	var v struct {
		State       json.RawMessage `json:"state"`
		StateBase64 *string         `json:"state_base64"`
		Version     int64           `json:"version"`
		Deleted     bool            `json:"deleted"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.Version, s.Deleted, s.Data = v.Version, v.Deleted && v.Version != 0, nil
	switch {
	case s.Deleted:
	case v.StateBase64 != nil:
		data, err := base64.StdEncoding.DecodeString(*v.StateBase64)
		if err != nil {
			return fmt.Errorf("apiv1: state_base64: %w", err)
		}
		s.Data = data
	case v.State != nil && !bytes.Equal(v.State, []byte("null")):
		var buf bytes.Buffer
		if err := json.Compact(&buf, v.State); err != nil {
			return err
		}
		s.Data = buf.Bytes()
	case s.Version != 0:
		s.Data = []byte("null")
	}
	return nil
}

// StateWrite is the body of PUT /api/v1/queues/{q}/state/{id}: the new
// state as a JSON value ("state") or base64 ("state_base64"), and the
// version it replaces ("version", 0 when the id has no state). "state":
// null deletes the state.
type StateWrite struct {
	State       json.RawMessage `json:"state,omitempty"`
	StateBase64 *string         `json:"state_base64,omitempty"`
	Version     *int64          `json:"version"`
}

// StateWritten answers a PUT of a state: the new version (after a delete,
// the tombstone's: the version keeps counting).
type StateWritten struct {
	Version int64 `json:"version"`
}

// errStateChoice is the error of a write with both or neither of state and
// state_base64.
var errStateChoice = errors.New(`give exactly one of "state" (a JSON value, null deletes) and "state_base64"`)

// Decode returns the bytes to write (nil with del true for a delete) and the
// expected version.
func (w StateWrite) Decode() (data []byte, del bool, expected int64, err error) {
	if w.Version == nil {
		return nil, false, 0, errors.New(`"version" is required: the current version (0 when the id has no state)`)
	}
	switch {
	case (w.State != nil) == (w.StateBase64 != nil):
		return nil, false, 0, errStateChoice
	case w.StateBase64 != nil:
		data, err = base64.StdEncoding.DecodeString(*w.StateBase64)
		if err != nil {
			return nil, false, 0, fmt.Errorf("state_base64: %w", err)
		}
		if data == nil {
			data = []byte{}
		}
		return data, false, *w.Version, nil
	case bytes.Equal(bytes.TrimSpace(w.State), []byte("null")):
		return nil, true, *w.Version, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, w.State); err != nil {
		return nil, false, 0, fmt.Errorf("state: %w", err)
	}
	return buf.Bytes(), false, *w.Version, nil
}
