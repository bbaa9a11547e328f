package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// The fast path of Request.UnmarshalJSON: a request in the shape the node
// writes (names in lower case, each once, values of the fields' kinds)
// is decoded by one tokenizer pass into the values encoding/json would
// have produced; at anything else (a name that differs only in case, a
// repeated name, a null, a number out of its field's range, invalid
// UTF-8, malformed JSON) it gives up, and encoding/json decodes the body.
// Unknown names are skipped, as encoding/json skips them.

// errSlowPath makes the fast path give up.
var errSlowPath = errors.New("wire: not the node's shape")

// requestJSON is a request as encoding/json decodes it.
type requestJSON struct {
	Queue string    `json:"queue"`
	Shard int       `json:"shard"`
	Jobs  []jobJSON `json:"jobs"`
}

// fastDecoder reads one request.
type fastDecoder struct {
	dec jsontext.Decoder
}

// decodeRequestFast decodes b into v as json.Unmarshal would, or returns
// errSlowPath (v is then undefined).
func decodeRequestFast(b []byte, v *requestJSON) error {
	d := &fastDecoder{}
	d.dec.Reset(bytes.NewBuffer(b))
	err := d.object(func(name []byte) error {
		switch string(name) {
		case "queue":
			return d.str(&v.Queue)
		case "shard":
			return d.integer(func(n int64) { v.Shard = int(n) }, strconv.IntSize)
		case "jobs":
			return d.array(func() error {
				v.Jobs = append(v.Jobs, jobJSON{})
				return d.job(&v.Jobs[len(v.Jobs)-1])
			}, func() { v.Jobs = []jobJSON{} })
		}
		return d.skip(name, "queue", "shard", "jobs")
	})
	if err != nil {
		return errSlowPath
	}
	if _, err := d.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return errSlowPath // more than one value, or garbage after it
	}
	return nil
}

// job reads one job.
func (d *fastDecoder) job(j *jobJSON) error {
	return d.object(func(name []byte) error {
		switch string(name) {
		case "id":
			return d.str(&j.ID)
		case "retry_count":
			return d.integer(func(n int64) { j.RetryCount = int(n) }, strconv.IntSize)
		case "perform_at":
			return d.float(&j.PerformAt)
		case "error":
			return d.str(&j.Error)
		case "payloads":
			return d.array(func() error {
				j.Payloads = append(j.Payloads, payloadJSON{})
				return d.payload(&j.Payloads[len(j.Payloads)-1])
			}, func() { j.Payloads = []payloadJSON{} })
		case "state":
			return d.raw(&j.State)
		case "state_base64":
			var s string
			if err := d.str(&s); err != nil {
				return err
			}
			j.StateBase64 = &s
			return nil
		case "deleted":
			return d.boolean(&j.Deleted)
		case "version":
			return d.integer(func(n int64) { j.Version = n }, 64)
		case "timer":
			return d.boolean(&j.Timer)
		}
		return d.skip(name, "id", "retry_count", "perform_at", "error", "payloads", "state", "state_base64", "deleted", "version", "timer")
	})
}

// payload reads one payload.
func (d *fastDecoder) payload(p *payloadJSON) error {
	return d.object(func(name []byte) error {
		switch string(name) {
		case "payload":
			return d.raw(&p.Payload)
		case "payload_base64":
			var s string
			if err := d.str(&s); err != nil {
				return err
			}
			p.PayloadBase64 = &s
			return nil
		case "score":
			return d.float(&p.Score)
		case "expires_at":
			var f float64
			if err := d.float(&f); err != nil {
				return err
			}
			p.ExpiresAt = &f
			return nil
		case "headers":
			p.Headers = map[string]string{}
			return d.object(func(k []byte) error {
				key := string(k) // before the value is read
				var s string
				err := d.str(&s)
				p.Headers[key] = s
				return err
			})
		}
		return d.skip(name, "payload", "payload_base64", "score", "expires_at", "headers")
	})
}

// object reads an object, calling member with each name, positioned
// before its value; the name's bytes are valid until the value is read.
// A name with an escape gives up.
func (d *fastDecoder) object(member func(name []byte) error) error {
	t, err := d.dec.ReadToken()
	if err != nil || t.Kind() != '{' {
		return errSlowPath
	}
	for d.dec.PeekKind() != '}' {
		v, err := d.dec.ReadValue()
		if err != nil || len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
			return errSlowPath
		}
		if err := member(v[1 : len(v)-1]); err != nil {
			return err
		}
	}
	_, err = d.dec.ReadToken()
	return err
}

// array reads an array, calling elem before each element; empty is called
// first (an empty array decodes to an empty slice, not nil).
func (d *fastDecoder) array(elem func() error, empty func()) error {
	t, err := d.dec.ReadToken()
	if err != nil || t.Kind() != '[' {
		return errSlowPath
	}
	empty()
	for d.dec.PeekKind() != ']' {
		if d.dec.PeekKind() == 0 {
			return errSlowPath
		}
		if err := elem(); err != nil {
			return err
		}
	}
	_, err = d.dec.ReadToken()
	return err
}

// skip skips the value of a name no field has: unless encoding/json would
// match it to one of names (which it matches without regard to case).
func (d *fastDecoder) skip(name []byte, names ...string) error {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return errSlowPath // encoding/json folds some non-ASCII letters
		}
	}
	for _, n := range names {
		if bytes.EqualFold(name, []byte(n)) {
			return errSlowPath
		}
	}
	return d.dec.SkipValue()
}

// str reads a string.
func (d *fastDecoder) str(s *string) error {
	t, err := d.dec.ReadToken()
	if err != nil || t.Kind() != '"' {
		return errSlowPath
	}
	*s = t.String()
	return nil
}

// boolean reads true or false.
func (d *fastDecoder) boolean(b *bool) error {
	t, err := d.dec.ReadToken()
	if err != nil || (t.Kind() != 't' && t.Kind() != 'f') {
		return errSlowPath
	}
	*b = t.Bool()
	return nil
}

// number reads a number's literal.
func (d *fastDecoder) number() ([]byte, error) {
	if d.dec.PeekKind() != '0' {
		return nil, errSlowPath
	}
	v, err := d.dec.ReadValue()
	if err != nil {
		return nil, errSlowPath
	}
	return v, nil
}

// integer reads an integer that fits bits, as encoding/json reads one.
func (d *fastDecoder) integer(set func(int64), bits int) error {
	v, err := d.number()
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(string(v), 10, bits)
	if err != nil {
		return errSlowPath
	}
	set(n)
	return nil
}

// float reads a float64, as encoding/json reads one.
func (d *fastDecoder) float(f *float64) error {
	v, err := d.number()
	if err != nil {
		return err
	}
	n, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return errSlowPath
	}
	*f = n
	return nil
}

// raw reads any value, copied (a json.RawMessage keeps its own bytes).
func (d *fastDecoder) raw(m *json.RawMessage) error {
	v, err := d.dec.ReadValue()
	if err != nil {
		return errSlowPath
	}
	*m = append(json.RawMessage(nil), v...)
	return nil
}
