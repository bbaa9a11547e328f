package apiv1

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
	"github.com/orderlyhq/orderly/webhook/wire"
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
// The bytes appear under "state" by the payload rule (wire.IsCompactJSON),
// else as base64 under "state_base64".
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
	case wire.IsCompactJSON(s.Data):
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

// StateWriteFields lists the fields of a state write, for messages.
const StateWriteFields = "state, state_base64, version"

// DecodeStateWrite checks and decodes the body of PUT
// /api/v1/queues/{q}/state/{id} as the server does, by the rules of an
// enqueue body's jobs (DecodeJob): body must be well-formed JSON
// (json.Valid), an object whose field names are exactly those of
// StateWrite, each at most once; "state" is any JSON value, kept in
// compact form as a payload is, null deleting the state; "state_base64"
// standard base64 in a valid UTF-8 string; "version" an integer from 0.
// It returns the bytes to write (nil with del true for a delete) and the
// expected version. Errors are *persistence.FieldError naming the field
// (Index -1); Field is empty when body is not an object.
func DecodeStateWrite(body []byte) (data []byte, del bool, expected int64, err error) {
	bad := func(field, format string, args ...any) error {
		return &persistence.FieldError{Field: jsonscan.Truncate(field, 64), Index: -1, Reason: fmt.Sprintf(format, args...)}
	}
	if k := jsonscan.KindOf(body); k != "an object" {
		return nil, false, 0, bad("", `the body must be {"state": ..., "version": n}, got %s`, k)
	}
	var state, b64, version []byte
	err = jsonscan.EachField(body, func(key, val []byte) error {
		var dst *[]byte
		switch string(key) {
		case "state":
			dst = &state
		case "state_base64":
			dst = &b64
		case "version":
			dst = &version
		default:
			return bad(string(key), "unknown field (known: %s)", StateWriteFields)
		}
		if *dst != nil {
			return bad(string(key), "given more than once")
		}
		*dst = val
		return nil
	})
	if err != nil {
		return nil, false, 0, err
	}
	if version == nil {
		return nil, false, 0, bad("version", "required: the current version (0 when the id has no state)")
	}
	expected, err = strconv.ParseInt(string(version), 10, 64)
	if err != nil || expected < 0 {
		return nil, false, 0, bad("version", "must be an integer from 0, got %s", jsonscan.Truncate(string(version), 32))
	}
	switch {
	case (state != nil) == (b64 != nil):
		return nil, false, 0, bad("state", "%v", errStateChoice)
	case b64 != nil:
		str, err := jsonscan.DecodeString(b64)
		if err != nil {
			return nil, false, 0, bad("state_base64", "%v", err)
		}
		data, err = base64.StdEncoding.DecodeString(str)
		if err != nil {
			return nil, false, 0, bad("state_base64", "not valid standard base64: %v", err)
		}
		if data == nil {
			data = []byte{}
		}
		return data, false, expected, nil
	case jsonscan.KindOf(state) == "null":
		return nil, true, expected, nil
	}
	return bytes.Clone(jsonscan.Compact(state)), false, expected, nil
}

// Feed answers GET /api/v1/queues/{q}/feed: entries of a stateful queue's
// change feed (docs/contract.md §11), oldest first, and the position to
// read on from ("next"). The feed is at least once: dedupe by (id,
// version).
type Feed struct {
	Entries []FeedEntry `json:"entries"`
	Next    string      `json:"next"`
}

// FeedEntry is one committed state change:
//
//	{"pos": "1764150000000-0", "id": "order-1", "version": 3, "state": {"paid": true}, "at": 1764150000.123}
//
// with "state_base64" for bytes that are not JSON, "state_sha1" (hex)
// instead of the state when it is over 1 KiB, or "deleted": true.
type FeedEntry struct {
	Pos     string
	ID      string
	Version int64
	Deleted bool
	Data    []byte
	SHA1    string
	At      float64
}

// MarshalJSON implements json.Marshaler.
func (e FeedEntry) MarshalJSON() ([]byte, error) {
	pos, _ := json.Marshal(e.Pos)
	id, _ := json.Marshal(e.ID)
	b := make([]byte, 0, len(e.Data)*4/3+96)
	b = append(b, `{"pos":`...)
	b = append(b, pos...)
	b = append(b, `,"id":`...)
	b = append(b, id...)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, e.Version, 10)
	switch {
	case e.Deleted:
		b = append(b, `,"state":null,"deleted":true`...)
	case e.SHA1 != "":
		b = append(b, `,"state_sha1":"`...)
		b = append(b, e.SHA1...)
		b = append(b, '"')
	case wire.IsCompactJSON(e.Data):
		b = append(b, `,"state":`...)
		b = append(b, e.Data...)
	default:
		b = append(b, `,"state_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, e.Data)
		b = append(b, '"')
	}
	b = append(b, `,"at":`...)
	b = strconv.AppendFloat(b, e.At, 'f', -1, 64)
	return append(b, '}'), nil
}

// UnmarshalJSON implements json.Unmarshaler; it reads what MarshalJSON
// writes.
func (e *FeedEntry) UnmarshalJSON(b []byte) error {
	var v struct {
		Pos         string          `json:"pos"`
		ID          string          `json:"id"`
		Version     int64           `json:"version"`
		State       json.RawMessage `json:"state"`
		StateBase64 *string         `json:"state_base64"`
		StateSHA1   string          `json:"state_sha1"`
		Deleted     bool            `json:"deleted"`
		At          float64         `json:"at"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = FeedEntry{Pos: v.Pos, ID: v.ID, Version: v.Version, Deleted: v.Deleted, SHA1: v.StateSHA1, At: v.At}
	switch {
	case v.StateBase64 != nil:
		data, err := base64.StdEncoding.DecodeString(*v.StateBase64)
		if err != nil {
			return fmt.Errorf("apiv1: state_base64: %w", err)
		}
		e.Data = data
	case v.State != nil && !e.Deleted:
		var buf bytes.Buffer
		if err := json.Compact(&buf, v.State); err != nil {
			return err
		}
		e.Data = buf.Bytes()
	}
	return nil
}
