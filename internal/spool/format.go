package spool

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// The file format (docs/contract.md §6.7). A segment file starts with
// magic and holds records, each framed as
//
//	uint32 big-endian length of body | uint32 big-endian CRC-32C of body | body
//
// where body is the JSON of one spooled call (record). A frame whose
// length runs past the end of the file, or whose checksum does not match,
// is torn: it and everything after it in the file are dropped.
const (
	magic       = "orderly spool 1\n"
	frameHeader = 8
	// maxFrame bounds a frame's length, so that a torn length field is
	// never taken for a huge record.
	maxFrame = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errTorn reports a frame that is cut short or fails its checksum.
var errTorn = errors.New("spool: torn or corrupt record")

// Record is one spooled call: the jobs of one Enqueue, for one queue, as
// the store takes them (due times and expiries already absolute).
type Record struct {
	Queue string
	Jobs  []persistence.NewJob
	// At is when the call was spooled.
	At time.Time
}

type recordJSON struct {
	Q  string    `json:"q"`
	At int64     `json:"at"` // unix nanoseconds
	J  []jobJSON `json:"j"`
}

type jobJSON struct {
	ID string            `json:"id"`
	P  []byte            `json:"p,omitempty"`
	S  *float64          `json:"s,omitempty"`
	A  int64             `json:"a,omitempty"` // perform_at, unix nanoseconds; 0: now
	H  map[string]string `json:"h,omitempty"`
	K  string            `json:"k,omitempty"`
	E  int64             `json:"e,omitempty"` // expires_at, unix nanoseconds; 0: never
	Pr int               `json:"pr,omitempty"`
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// encode returns r as one frame.
func encode(r Record) ([]byte, error) {
	rj := recordJSON{Q: r.Queue, At: nanos(r.At), J: make([]jobJSON, len(r.Jobs))}
	for i, j := range r.Jobs {
		rj.J[i] = jobJSON{ID: j.ID, P: j.Payload, S: j.Score, A: nanos(j.PerformAt), H: j.Headers, K: j.DedupKey,
			E: nanos(j.ExpiresAt), Pr: j.Priority}
	}
	body, err := json.Marshal(rj)
	if err != nil {
		return nil, fmt.Errorf("spool: encode a record: %w", err)
	}
	frame := make([]byte, frameHeader+len(body))
	binary.BigEndian.PutUint32(frame, uint32(len(body)))
	binary.BigEndian.PutUint32(frame[4:], crc32.Checksum(body, castagnoli))
	copy(frame[frameHeader:], body)
	return frame, nil
}

// decode reads the body of a frame.
func decode(body []byte) (Record, error) {
	var rj recordJSON
	if err := json.Unmarshal(body, &rj); err != nil {
		return Record{}, fmt.Errorf("%w: %v", errTorn, err)
	}
	r := Record{Queue: rj.Q, At: fromNanos(rj.At), Jobs: make([]persistence.NewJob, len(rj.J))}
	for i, j := range rj.J {
		r.Jobs[i] = persistence.NewJob{ID: j.ID, Payload: j.P, Score: j.S, PerformAt: fromNanos(j.A), Headers: j.H,
			DedupKey: j.K, ExpiresAt: fromNanos(j.E), Priority: j.Pr}
	}
	return r, nil
}

// readFrame reads the next frame's body from r, where at most left bytes
// remain (so that a damaged length allocates nothing big). It returns
// io.EOF at a clean end, errTorn for a frame cut short or failing its
// checksum.
func readFrame(r io.Reader, left int64) ([]byte, error) {
	var h [frameHeader]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, errTorn
	}
	size := binary.BigEndian.Uint32(h[:])
	if size > maxFrame || int64(size) > left-frameHeader {
		return nil, errTorn
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, errTorn
	}
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(h[4:]) {
		return nil, errTorn
	}
	return body, nil
}
