package web

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// The pull routes write their answers by hand, in one buffer: a lease's
// jobs are already JSON (wire.Job.MarshalJSON), which encoding/json would
// check and compact again for every lease.

// appendPullLease appends l as encoding/json writes an apiv1.PullLease.
func appendPullLease(dst []byte, l *apiv1.PullLease) ([]byte, error) {
	dst = append(dst, `{"lease":`...)
	dst = appendJSONString(dst, l.Lease)
	dst = append(dst, `,"deadline":`...)
	dst, err := appendJSONFloat(dst, l.Deadline)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `,"jobs":`...)
	// The jobs in this buffer (a job's MarshalJSON would allocate one for
	// each, a request's one for them all).
	dst, err = wire.AppendJobs(dst, l.Jobs)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// appendPullAnswered appends a as encoding/json writes an
// apiv1.PullAnswered.
func appendPullAnswered(dst []byte, a *apiv1.PullAnswered) ([]byte, error) {
	dst = append(dst, `{"accepted":`...)
	dst = strconv.AppendBool(dst, a.Accepted)
	if len(a.Lost) > 0 {
		dst = append(dst, `,"lost":[`...)
		for i, id := range a.Lost {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, id)
		}
		dst = append(dst, ']')
	}
	if a.Next != nil {
		dst = append(dst, `,"next":`...)
		var err error
		if dst, err = appendPullLease(dst, a.Next); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// appendJSONFloat appends f as encoding/json writes a float64: a time in
// unix seconds by strconv, anything else through encoding/json.
func appendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// appendJSONString appends s as a JSON string: plain ASCII as is,
// anything else through encoding/json, HTML characters unescaped, as
// writeJSON writes them.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// writePullJSON writes the 200 answer of a pull route: body, made by
// appendPullLease or appendPullAnswered (err from it: a 500).
// pullBufs holds the buffers pull answers are written in: a lease of a
// hundred jobs is tens of KiB, which a buffer grown anew for each answer
// copies several times.
var pullBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledPullBuf is the largest buffer kept for reuse.
const maxPooledPullBuf = 1 << 20

func getPullBuf() *[]byte { return pullBufs.Get().(*[]byte) }

func putPullBuf(b *[]byte) {
	if cap(*b) <= maxPooledPullBuf {
		pullBufs.Put(b)
	}
}

func (s *Server) writePullJSON(w http.ResponseWriter, r *http.Request, body []byte, err error) {
	status := http.StatusOK
	if err != nil {
		// Never seen: scores and times are finite.
		s.log.Error("web: encode answer", s.requestAttrs(r, err)...)
		status, body = http.StatusInternalServerError, []byte(`{"error":"`+msgInternal+`"}`)
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
