package redisstore

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// The scripts (lua/lib/fields.lua) write fields: a LEB128 length, then that many
// bytes. Job and morgue records, in-flight batches and dead reports are
// sequences of fields; docs/storage.md section 3 lays them out. The decoders
// here never panic on corrupt input (FuzzDecode).

type fieldReader struct {
	s   string
	pos int
}

func (r *fieldReader) done() bool { return r.pos >= len(r.s) }

func (r *fieldReader) next() (string, error) {
	n, shift := 0, 0
	for {
		if r.pos >= len(r.s) || shift > 28 {
			return "", errCorrupt
		}
		b := r.s[r.pos]
		r.pos++
		n |= int(b&0x7f) << shift
		if b < 0x80 {
			break
		}
		shift += 7
	}
	if n > len(r.s)-r.pos {
		return "", errCorrupt
	}
	f := r.s[r.pos : r.pos+n]
	r.pos += n
	return f, nil
}

func (r *fieldReader) int() (int64, error) {
	f, err := r.next()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		return 0, errCorrupt
	}
	return v, nil
}

func (r *fieldReader) float() (float64, error) {
	f, err := r.next()
	if err != nil {
		return 0, err
	}
	return parseScore(f)
}

// parseScore parses a score or time as the scripts keep it.
func parseScore(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		return 0, errCorrupt
	}
	return v, nil
}

// optTime parses an optional time field ("" = none).
func optTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	f, err := parseScore(s)
	if err != nil {
		return time.Time{}, err
	}
	return persistence.FromUnixSeconds(f), nil
}

// Record flags (lua/lib/fields.lua).
const (
	flagError    = 1
	flagFifo     = 2
	flagOverflow = 4
	flagHold     = 8
	// flagHeaders: the inline payloads are triples (score, data, headers).
	// Flag 32 (some overflow payload may carry headers, after the score key
	// of its ovs value) only the scripts read.
	flagHeaders = 16
	// flagPriority: bits 64 and 128 hold the priority - 1
	// (docs/contract.md §3.16); 0 in records of earlier releases.
	flagPriority = 64
)

// encodeHeaders encodes a payload's headers as the scripts keep them: the
// fields k1 v1 k2 v2 ..., keys in byte order; "" for none
// (docs/storage.md section 3). A payload's expiry (docs/contract.md §3.15)
// is the pair with the empty key, which no user header may have: fld("")
// fld(expires_at in unix milliseconds, decimal), first in byte order.
func encodeHeaders(h map[string]string, expires time.Time) string {
	if len(h) == 0 && expires.IsZero() {
		return ""
	}
	keys := make([]string, 0, len(h))
	n := 24
	for k, v := range h {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	if !expires.IsZero() {
		b = appendField(b, "")
		b = appendField(b, strconv.FormatInt(expires.Round(time.Millisecond).UnixMilli(), 10))
	}
	for _, k := range keys {
		b = appendField(b, k)
		b = appendField(b, h[k])
	}
	return string(b)
}

// appendField appends a field: a LEB128 length, then s.
func appendField(b []byte, s string) []byte {
	n := uint(len(s))
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(append(b, byte(n)), s...)
}

// decodeHeaders decodes encodeHeaders' output: the user headers (nil for
// none) and the expiry (the zero time for none), which the pair with the
// empty key holds.
func decodeHeaders(s string) (map[string]string, time.Time, error) {
	var exp time.Time
	if s == "" {
		return nil, exp, nil
	}
	var h map[string]string
	r := &fieldReader{s: s}
	for !r.done() {
		k, err := r.next()
		if err != nil {
			return nil, exp, err
		}
		v, err := r.next()
		if err != nil {
			return nil, exp, err
		}
		if k == "" {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, exp, errCorrupt
			}
			exp = time.UnixMilli(ms)
			continue
		}
		if h == nil {
			h = map[string]string{}
		}
		h[k] = v
	}
	return h, exp, nil
}

// record is a decoded job or morgue record.
type record struct {
	at float64
	rc int
	// first is, in a morgue record, when the entry was created (its first
	// payload died); 0 in an entry written before the field existed.
	first    float64
	err      string
	hold     time.Time
	overflow int // payloads in the overflow, not in payloads
	priority int // 0 (the default, 1) or 2 to persistence.MaxPriority
	payloads []persistence.Payload
	// more are overflow payloads read besides the record, following
	// payloads.
	more []persistence.Payload
}

// count is the number of payloads the record holds, inline and overflow.
func (r *record) count() int { return len(r.payloads) + r.overflow }

// shown returns the payloads read: inline, then those read from the
// overflow.
func (r *record) shown() []persistence.Payload {
	if len(r.more) == 0 {
		return r.payloads
	}
	return append(slices.Clip(r.payloads), r.more...)
}

// decodeRecord decodes a job record (morgue: a morgue record, whose rc
// field holds its creation time, or is empty in an entry written before).
func decodeRecord(s string, morgue bool) (record, error) {
	var rec record
	if s == "" {
		return rec, errCorrupt
	}
	flags := s[0]
	if p := int(flags / flagPriority); p > 0 {
		rec.priority = p + 1
	}
	r := &fieldReader{s: s, pos: 1}
	atS, err := r.next()
	if err != nil {
		return rec, err
	}
	if rec.at, err = parseScore(atS); err != nil {
		return rec, err
	}
	rc, err := r.next()
	if err != nil {
		return rec, err
	}
	if !morgue {
		v, err := strconv.Atoi(rc)
		if err != nil {
			return rec, errCorrupt
		}
		rec.rc = v
	} else if rc != "" {
		// A morgue record keeps its creation time where a job record keeps
		// its retry count; older entries have "" there.
		if rec.first, err = parseScore(rc); err != nil {
			return rec, err
		}
	}
	if flags&flagFifo != 0 {
		if _, err := r.next(); err != nil {
			return rec, err
		}
	}
	if flags&flagError != 0 {
		if rec.err, err = r.next(); err != nil {
			return rec, err
		}
	}
	if flags&flagHold != 0 {
		h, err := r.next()
		if err != nil {
			return rec, err
		}
		if rec.hold, err = optTime(h); err != nil {
			return rec, err
		}
	}
	if flags&flagOverflow != 0 {
		n, err := r.int()
		if err != nil || n < 0 {
			return rec, errCorrupt
		}
		rec.overflow = int(n)
	}
	for !r.done() {
		sc, err := r.next()
		if err != nil {
			return rec, err
		}
		data, err := r.next()
		if err != nil {
			return rec, err
		}
		var hdrs map[string]string
		var exp time.Time
		if flags&flagHeaders != 0 {
			h, err := r.next()
			if err != nil {
				return rec, err
			}
			if hdrs, exp, err = decodeHeaders(h); err != nil {
				return rec, err
			}
		}
		score := rec.at
		if sc != "" {
			if score, err = parseScore(sc); err != nil {
				return rec, err
			}
		}
		rec.payloads = append(rec.payloads, persistence.Payload{Data: []byte(data), Score: score, Headers: hdrs, ExpiresAt: exp})
	}
	return rec, nil
}

// batchHeader is the header of an encoded batch.
type batchHeader struct {
	n         int
	token     string
	epoch     int64
	owner     string
	seq       int64
	fetchedAt float64
	bound     time.Time
}

func (r *fieldReader) header() (batchHeader, error) {
	var h batchHeader
	ver, err := r.next()
	if err != nil {
		return h, err
	}
	if ver != "2" {
		return h, fmt.Errorf("%w: version %q", errCorrupt, ver)
	}
	n, err := r.int()
	if err != nil {
		return h, err
	}
	if n < 0 || n > int64(len(r.s)) {
		return h, errCorrupt
	}
	h.n = int(n)
	if h.token, err = r.next(); err != nil {
		return h, err
	}
	h.epoch, h.owner, _ = splitToken(h.token)
	if h.seq, err = r.int(); err != nil {
		return h, err
	}
	if h.fetchedAt, err = r.float(); err != nil {
		return h, err
	}
	bound, err := r.next()
	if err != nil {
		return h, err
	}
	if h.bound, err = optTime(bound); err != nil {
		return h, err
	}
	if _, err := r.next(); err != nil { // the call timeout
		return h, err
	}
	return h, nil
}

// decodeBatch decodes an encoded batch: the header, then per job its id and
// a job record holding the payloads handed over. It never panics on corrupt
// input.
func decodeBatch(s string) (batchHeader, []persistence.Job, error) {
	r := &fieldReader{s: s}
	h, err := r.header()
	if err != nil {
		return h, nil, err
	}
	jobs := make([]persistence.Job, 0, min(h.n, 1024))
	for range h.n {
		id, err := r.next()
		if err != nil {
			return h, nil, err
		}
		raw, err := r.next()
		if err != nil {
			return h, nil, err
		}
		rec, err := decodeRecord(raw, false)
		if err != nil {
			return h, nil, err
		}
		if rec.overflow != 0 {
			return h, nil, fmt.Errorf("%w: overflow in a batch", errCorrupt)
		}
		jobs = append(jobs, persistence.Job{
			ID: id, Payloads: rec.payloads, PayloadCount: len(rec.payloads),
			PerformAt: persistence.FromUnixSeconds(rec.at), RetryCount: rec.rc, Error: rec.err,
			Priority: rec.priority,
		})
	}
	if err := decodeBatchSections(r, jobs); err != nil {
		return h, nil, fmt.Errorf("%w: %d trailing bytes", err, len(s)-r.pos)
	}
	for i := range jobs {
		if len(jobs[i].Payloads) == 0 {
			jobs[i].Timer = true
		}
	}
	return h, jobs, nil
}

// decodeState decodes an entry of the state hash: fld(version) bytes, or a
// deleted state's tombstone "\x00" fld(version) (a NUL byte is an empty
// first field, which a state never starts with). nil (no entry) is
// version 0. A state's Data is never nil, a tombstone's always is.
func decodeState(v any) (persistence.State, error) {
	s, ok := v.(string)
	if !ok {
		return persistence.State{}, nil
	}
	tomb := len(s) > 0 && s[0] == 0
	r := &fieldReader{s: s}
	if tomb {
		r.pos = 1
	}
	ver, err := r.int()
	if err != nil || ver <= 0 {
		return persistence.State{}, errCorrupt
	}
	if tomb {
		if !r.done() {
			return persistence.State{}, fmt.Errorf("%w: bytes after a tombstone", errCorrupt)
		}
		return persistence.State{Version: ver, Deleted: true}, nil
	}
	return persistence.State{Data: append([]byte{}, s[r.pos:]...), Version: ver}, nil
}

// splitToken splits a lease token "<epoch>/<owner>/<nonce>" (layout 1's
// tokens have no nonce).
func splitToken(token string) (epoch int64, owner string, ok bool) {
	e, rest, found := strings.Cut(token, "/")
	if !found {
		return 0, "", false
	}
	v, err := strconv.ParseInt(e, 10, 64)
	if err != nil {
		return 0, "", false
	}
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return v, rest, true
}

// formatFloat formats a score or time so that Redis and Lua read back the
// same float64.
func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// decodeBatchSections reads what follows a batch's jobs: on a stateful
// queue "s" and the state version handed out with each job, then, when a
// timer brought some of its jobs, "t" and a flag per job (docs/storage.md
// section 3); last, when an id was cancelled while in flight, "c" and a
// mode per job (docs/contract.md §3.13), which only the scripts act on.
func decodeBatchSections(r *fieldReader, jobs []persistence.Job) error {
	for !r.done() {
		tag, err := r.next()
		if err != nil {
			return errCorrupt
		}
		switch tag {
		case "s":
			for i := range jobs {
				v, err := r.int()
				if err != nil || v < 0 {
					return errCorrupt
				}
				jobs[i].State = &persistence.State{Version: v}
			}
		case "t", "c":
			for i := range jobs {
				f, err := r.next()
				if err != nil {
					return errCorrupt
				}
				if tag == "t" {
					jobs[i].Timer = f == "1"
				}
			}
		default:
			return errCorrupt
		}
	}
	return nil
}
