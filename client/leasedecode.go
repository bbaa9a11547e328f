package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/orderlyhq/orderly/webhook/wire"
)

// The fast path of a lease's decoding: a lease in the shape the node
// writes (names in lower case, each once, values of the fields' kinds) is
// decoded by one jsontext pass into what json.Unmarshal into a PullLease
// produces (wire.Job.UnmarshalJSON for each job, which decodes it again);
// at anything else (a name that differs only in case, a repeated name, a
// null, a number out of its field's range, invalid UTF-8, an escape in a
// name, malformed JSON, a payload the job's decoding refuses) it gives up,
// and encoding/json decodes the lease. Unknown names are skipped, as
// encoding/json skips them.

// errSlowPath makes the fast path give up.
var errSlowPath = errors.New("client: not the node's shape")

// jobJSON and payloadJSON are a job and a payload as
// wire.Job.UnmarshalJSON decodes them before it converts them.
type jobJSON struct {
	ID          string
	RetryCount  int
	PerformAt   float64
	Error       string
	Payloads    []payloadJSON
	State       json.RawMessage
	StateBase64 *string
	Deleted     bool
	Version     int64
	Timer       bool
}

type payloadJSON struct {
	Payload       json.RawMessage
	PayloadBase64 *string
	Score         float64
	Headers       map[string]string
	ExpiresAt     *float64
}

// fastDecoder reads one request.
type fastDecoder struct {
	dec jsontext.Decoder
}

// decodeLeaseFast decodes b as json.Unmarshal into a PullLease would, or
// returns errSlowPath.
func decodeLeaseFast(b []byte) (*PullLease, error) {
	d := &fastDecoder{}
	d.dec.Reset(bytes.NewBuffer(b))
	l := new(PullLease)
	var jobs []jobJSON
	seen := false
	err := d.object(func(name []byte) error {
		switch string(name) {
		case "lease":
			return d.str(&l.ID)
		case "deadline":
			return d.float(&l.Deadline)
		case "jobs":
			seen = true
			return d.array(func() error {
				jobs = append(jobs, jobJSON{})
				return d.job(&jobs[len(jobs)-1])
			}, func() {})
		}
		return d.skip(name, "lease", "deadline", "jobs")
	})
	if err != nil {
		return nil, errSlowPath
	}
	if _, err := d.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, errSlowPath // more than one value, or garbage after it
	}
	if seen {
		l.Jobs = make([]wire.Job, len(jobs))
		for i := range jobs {
			if err := jobs[i].job(&l.Jobs[i]); err != nil {
				return nil, errSlowPath
			}
		}
	}
	return l, nil
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

// job converts a decoded job as wire.Job.UnmarshalJSON does.
func (v *jobJSON) job(out *wire.Job) error {
	*out = wire.Job{ID: v.ID, RetryCount: v.RetryCount, PerformAt: v.PerformAt, Error: v.Error, Version: v.Version, Timer: v.Timer}
	if v.Payloads != nil {
		out.Payloads = make([]wire.Payload, len(v.Payloads))
		for i := range v.Payloads {
			if err := v.Payloads[i].payload(&out.Payloads[i]); err != nil {
				return err
			}
		}
	}
	switch {
	case v.StateBase64 != nil:
		data, err := base64.StdEncoding.DecodeString(*v.StateBase64)
		if err != nil {
			return errSlowPath
		}
		out.Stateful, out.State = true, data
	case v.State != nil:
		out.Stateful = true
		if string(v.State) != "null" || (v.Version != 0 && !v.Deleted) {
			out.State = compactJSON(v.State)
		}
	}
	return nil
}

// payload converts a decoded payload as wire.Payload.UnmarshalJSON does.
func (v *payloadJSON) payload(p *wire.Payload) error {
	*p = wire.Payload{Score: v.Score, Headers: v.Headers}
	if v.ExpiresAt != nil {
		sec, frac := math.Modf(*v.ExpiresAt)
		p.ExpiresAt = time.Unix(int64(sec), int64(math.Round(frac*1e9)))
	}
	switch {
	case v.Payload != nil && v.PayloadBase64 != nil:
		return errSlowPath
	case v.Payload != nil:
		p.Data = compactJSON(v.Payload)
	case v.PayloadBase64 != nil:
		data, err := base64.StdEncoding.DecodeString(*v.PayloadBase64)
		if err != nil {
			return errSlowPath
		}
		p.Data = data
	default:
		return errSlowPath
	}
	return nil
}

// compactJSON returns a JSON value without whitespace outside its strings:
// raw itself when it has none.
func compactJSON(raw []byte) []byte {
	if wire.IsCompactJSON(raw) {
		return raw
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
