package webhook

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// UnmarshalJSON implements json.Unmarshaler: it decodes what the node sends
// (see the package documentation) as encoding/json would decode the struct.
// Bodies of the shape the node writes for a queue that is not stateful
// take a fast path that reads them in one pass, without reflection; any
// other body (stateful jobs, escaped strings, unknown or repeated members,
// nulls, invalid JSON) is decoded by encoding/json, with the same result
// and errors as before.
func (r *Request) UnmarshalJSON(b []byte) error {
	if decodeRequestFast(b, r) {
		return nil
	}
	type plain Request
	return json.Unmarshal(b, (*plain)(r))
}

// maxFastDepth bounds the nesting of a payload that the fast path skips;
// deeper ones go to encoding/json.
const maxFastDepth = 512

// fastDecoder reads a body on the fast path. Every method returns false
// when the body is not one the fast path decodes; nothing is then kept.
type fastDecoder struct {
	data []byte
	off  int
	// arena holds the payloads' bytes: one copy of the body's, so that
	// Data does not alias the caller's buffer (json.Unmarshaler's rule).
	arena []byte
}

// decodeRequestFast decodes b into r when b has the shape the fast path
// reads and reports whether it did; r is left unchanged when it did not.
func decodeRequestFast(b []byte, r *Request) bool {
	d := &fastDecoder{data: b}
	var out Request
	var seen uint8
	if !d.object(func(key []byte) bool {
		var bit uint8
		var ok bool
		switch string(key) {
		case "queue":
			bit = 1
			out.Queue, ok = d.str()
		case "shard":
			bit = 2
			out.Shard, ok = d.integer()
		case "jobs":
			bit = 4
			out.Jobs, ok = d.jobs()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}) {
		return false
	}
	if d.ws(); d.off != len(d.data) {
		return false
	}
	if seen&1 != 0 {
		r.Queue = out.Queue
	}
	if seen&2 != 0 {
		r.Shard = out.Shard
	}
	if seen&4 != 0 {
		r.Jobs = out.Jobs
	}
	return true
}

// jobs reads the array of "jobs".
func (d *fastDecoder) jobs() ([]Job, bool) {
	jobs := make([]Job, 0, 1)
	ok := d.array(func() bool {
		var j Job
		var seen uint8
		if !d.object(func(key []byte) bool {
			var bit uint8
			var ok bool
			switch string(key) {
			case "id":
				bit = 1
				j.ID, ok = d.str()
			case "retry_count":
				bit = 2
				j.RetryCount, ok = d.integer()
			case "perform_at":
				bit = 4
				j.PerformAt, ok = d.number()
			case "error":
				bit = 8
				j.Error, ok = d.str()
			case "payloads":
				bit = 16
				j.Payloads, ok = d.payloads()
			}
			if !ok || seen&bit != 0 {
				return false
			}
			seen |= bit
			return true
		}) {
			return false
		}
		jobs = append(jobs, j)
		return true
	})
	return jobs, ok
}

// payloads reads the array of a job's "payloads".
func (d *fastDecoder) payloads() ([]Payload, bool) {
	ps := make([]Payload, 0, 1)
	ok := d.array(func() bool {
		var p Payload
		var raw []byte
		var b64 string
		var seen uint8
		if !d.object(func(key []byte) bool {
			var bit uint8
			var ok bool
			switch string(key) {
			case "payload":
				bit = 1
				raw, ok = d.value()
				ok = ok && string(raw) != "null"
			case "payload_base64":
				bit = 2
				b64, ok = d.str()
			case "score":
				bit = 4
				p.Score, ok = d.number()
			case "headers":
				bit = 8
				p.Headers, ok = d.headers()
			}
			if !ok || seen&bit != 0 {
				return false
			}
			seen |= bit
			return true
		}) {
			return false
		}
		switch seen & 3 {
		case 1:
			p.Data = d.keep(raw)
		case 2:
			data, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				return false
			}
			p.Data = data
		default:
			return false
		}
		ps = append(ps, p)
		return true
	})
	return ps, ok
}

// headers reads a payload's "headers": an object of strings.
func (d *fastDecoder) headers() (map[string]string, bool) {
	h := make(map[string]string, 2)
	ok := d.object(func(key []byte) bool {
		v, ok := d.str()
		if ok {
			h[string(key)] = v
		}
		return ok
	})
	return h, ok
}

// keep returns a copy of raw, a part of the body, in the arena.
func (d *fastDecoder) keep(raw []byte) []byte {
	if cap(d.arena)-len(d.arena) < len(raw) {
		d.arena = make([]byte, 0, max(len(raw), len(d.data)-d.off+len(raw)))
	}
	start := len(d.arena)
	d.arena = append(d.arena, raw...)
	return d.arena[start:len(d.arena):len(d.arena)]
}

// ws skips JSON whitespace.
func (d *fastDecoder) ws() {
	for d.off < len(d.data) {
		switch d.data[d.off] {
		case ' ', '\t', '\r', '\n':
			d.off++
		default:
			return
		}
	}
}

// consume skips whitespace and then c, reporting whether c was there.
func (d *fastDecoder) consume(c byte) bool {
	d.ws()
	if d.off < len(d.data) && d.data[d.off] == c {
		d.off++
		return true
	}
	return false
}

// object reads an object, calling member with each key (unescaped
// strings only) positioned at its value.
func (d *fastDecoder) object(member func(key []byte) bool) bool {
	if !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	for {
		d.ws()
		key, ok := d.rawStr()
		if !ok || !d.consume(':') {
			return false
		}
		d.ws()
		if !member(key) {
			return false
		}
		if d.consume(',') {
			continue
		}
		return d.consume('}')
	}
}

// array reads an array, calling elem at each element.
func (d *fastDecoder) array(elem func() bool) bool {
	if !d.consume('[') {
		return false
	}
	if d.consume(']') {
		return true
	}
	for {
		d.ws()
		if !elem() {
			return false
		}
		if d.consume(',') {
			continue
		}
		return d.consume(']')
	}
}

// rawStr reads a string without escapes, in valid UTF-8, and returns its
// bytes (a part of the body).
func (d *fastDecoder) rawStr() ([]byte, bool) {
	if d.off >= len(d.data) || d.data[d.off] != '"' {
		return nil, false
	}
	start := d.off + 1
	ascii := true
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			s := d.data[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			d.off = i + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// str reads a string value.
func (d *fastDecoder) str() (string, bool) {
	s, ok := d.rawStr()
	return string(s), ok
}

// integer reads a number without fraction or exponent that fits an int.
func (d *fastDecoder) integer() (int, bool) {
	start := d.off
	if !d.skipNumber() {
		return 0, false
	}
	n, err := strconv.ParseInt(string(d.data[start:d.off]), 10, strconv.IntSize)
	return int(n), err == nil
}

// number reads a number as a float64.
func (d *fastDecoder) number() (float64, bool) {
	start := d.off
	if !d.skipNumber() {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(d.data[start:d.off]), 64)
	return f, err == nil
}

// skipNumber skips a JSON number (RFC 8259 grammar).
func (d *fastDecoder) skipNumber() bool {
	data, i := d.data, d.off
	digits := func() bool {
		start := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	d.off = i
	return true
}

// value skips any JSON value and returns its bytes.
func (d *fastDecoder) value() ([]byte, bool) {
	start := d.off
	if !d.skipValue(0) {
		return nil, false
	}
	return d.data[start:d.off], true
}

// skipValue skips a JSON value, checking its syntax.
func (d *fastDecoder) skipValue(depth int) bool {
	if depth > maxFastDepth || d.off >= len(d.data) {
		return false
	}
	switch c := d.data[d.off]; {
	case c == '{':
		return d.object(func([]byte) bool { return d.skipValue(depth + 1) })
	case c == '[':
		return d.array(func() bool { return d.skipValue(depth + 1) })
	case c == '"':
		return d.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.skipNumber()
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(d.data)-d.off >= len(lit) && string(d.data[d.off:d.off+len(lit)]) == lit {
			d.off += len(lit)
			return true
		}
	}
	return false
}

// skipString skips a string, escapes included, checking its syntax as
// encoding/json does (bytes of invalid UTF-8 are allowed).
func (d *fastDecoder) skipString() bool {
	data := d.data
	for i := d.off + 1; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			d.off = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			i++
			if i >= len(data) {
				return false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return false
				}
				for _, h := range data[i+1 : i+5] {
					if !isHex(h) {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
