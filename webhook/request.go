package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/orderlyhq/orderly"
)

// encodeBatch returns the JSON body of a delivery of b (see the package
// documentation). It writes the JSON by hand because encoding/json compacts
// a json.RawMessage, and a JSON payload must reach the receiver byte for
// byte.
func encodeBatch(b *orderly.Batch) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"queue":`)
	writeString(&buf, b.Queue)
	buf.WriteString(`,"shard":`)
	buf.WriteString(strconv.Itoa(b.Shard))
	buf.WriteString(`,"jobs":[`)
	for i, j := range b.Jobs {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := writeJob(&buf, j); err != nil {
			return nil, err
		}
	}
	buf.WriteString(`]}`)
	return buf.Bytes(), nil
}

// writeJob writes one element of "jobs".
func writeJob(buf *bytes.Buffer, j orderly.Job) error {
	buf.WriteString(`{"id":`)
	writeString(buf, j.ID)
	buf.WriteString(`,"retry_count":`)
	buf.WriteString(strconv.Itoa(j.RetryCount))
	buf.WriteString(`,"perform_at":`)
	if err := writeNumber(buf, unixSeconds(j.PerformAt)); err != nil {
		return fmt.Errorf("webhook: job %q: perform_at: %w", j.ID, err)
	}
	if j.Error != "" {
		buf.WriteString(`,"error":`)
		writeString(buf, j.Error)
	}
	buf.WriteString(`,"payloads":[`)
	for i, p := range j.Payloads {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := writePayload(buf, p); err != nil {
			return fmt.Errorf("webhook: job %q: %w", j.ID, err)
		}
	}
	buf.WriteString(`]}`)
	return nil
}

// writePayload writes one element of "payloads": the data as "payload" when
// it is JSON that any receiver can parse, else as "payload_base64".
func writePayload(buf *bytes.Buffer, p orderly.Payload) error {
	if isPortableJSON(p.Data) {
		buf.WriteString(`{"payload":`)
		buf.Write(p.Data)
	} else {
		buf.WriteString(`{"payload_base64":"`)
		buf.WriteString(base64.StdEncoding.EncodeToString(p.Data))
		buf.WriteByte('"')
	}
	buf.WriteString(`,"score":`)
	if err := writeNumber(buf, p.Score); err != nil {
		return fmt.Errorf("score: %w", err)
	}
	buf.WriteByte('}')
	return nil
}

// isPortableJSON reports whether data can be embedded as a JSON value:
// valid JSON (which excludes empty data) in valid UTF-8. json.Valid alone
// accepts invalid UTF-8 inside strings, which RFC 8259 parsers may reject.
func isPortableJSON(data []byte) bool {
	return json.Valid(data) && utf8.Valid(data)
}

// writeString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	buf.Write(b)
}

// writeNumber writes f as a JSON number; NaN and infinities have none.
func writeNumber(buf *bytes.Buffer, f float64) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

// unixSeconds converts t to float unix seconds; the zero time is 0. Adding
// the fraction to the whole seconds keeps more precision than dividing
// t.UnixNano().
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}
