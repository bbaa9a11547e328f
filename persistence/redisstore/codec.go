package redisstore

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/orderlyhq/orderly/persistence"
)

// The in-flight record of a shard is written by the scripts (lua/lib.lua) as
// a sequence of length-prefixed fields "<len>:<bytes>":
//
//	"1", n, token, seq, fetched_at,
//	n times: id, retry_count, perform_at, error, np, np/2 x (payload, score)
//
// The fetch script returns the same bytes to the caller, so one decoder
// serves fetch results, the morgue report, lookups and listings.

var errCorrupt = errors.New("redisstore: corrupt batch record")

// batchHeader is the header of an encoded batch.
type batchHeader struct {
	n         int
	token     string
	epoch     int64
	owner     string
	seq       int64
	fetchedAt float64
}

type fieldReader struct {
	s   string
	pos int
}

func (r *fieldReader) next() (string, error) {
	colon := strings.IndexByte(r.s[r.pos:], ':')
	if colon <= 0 || colon > 10 {
		return "", errCorrupt
	}
	n, err := strconv.Atoi(r.s[r.pos : r.pos+colon])
	if err != nil || n < 0 {
		return "", errCorrupt
	}
	start := r.pos + colon + 1
	if n > len(r.s)-start {
		return "", errCorrupt
	}
	r.pos = start + n
	return r.s[start:r.pos], nil
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

// parseScore parses a score or time as Redis formats it.
func parseScore(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		return 0, errCorrupt
	}
	return v, nil
}

func (r *fieldReader) header() (batchHeader, error) {
	var h batchHeader
	ver, err := r.next()
	if err != nil {
		return h, err
	}
	if ver != "1" {
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
	return h, nil
}

// decodeBatch decodes an encoded batch. It never panics on corrupt input.
func decodeBatch(s string) (batchHeader, []persistence.Job, error) {
	r := &fieldReader{s: s}
	h, err := r.header()
	if err != nil {
		return h, nil, err
	}
	jobs := make([]persistence.Job, 0, min(h.n, 1024))
	for range h.n {
		var j persistence.Job
		if j.ID, err = r.next(); err != nil {
			return h, nil, err
		}
		rc, err := r.int()
		if err != nil {
			return h, nil, err
		}
		j.RetryCount = int(rc)
		at, err := r.float()
		if err != nil {
			return h, nil, err
		}
		j.PerformAt = persistence.FromUnixSeconds(at)
		if j.Error, err = r.next(); err != nil {
			return h, nil, err
		}
		np, err := r.int()
		if err != nil {
			return h, nil, err
		}
		if np < 0 || np%2 != 0 || np > int64(len(s)) {
			return h, nil, errCorrupt
		}
		j.Payloads = make([]persistence.Payload, 0, np/2)
		for range np / 2 {
			data, err := r.next()
			if err != nil {
				return h, nil, err
			}
			score, err := r.float()
			if err != nil {
				return h, nil, err
			}
			j.Payloads = append(j.Payloads, persistence.Payload{Data: []byte(data), Score: score})
		}
		j.PayloadCount = len(j.Payloads)
		jobs = append(jobs, j)
	}
	if r.pos != len(s) {
		return h, nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(s)-r.pos)
	}
	return h, jobs, nil
}

// encodeBatch is the Go twin of the scripts' encoder, used by tests.
func encodeBatch(h batchHeader, jobs []persistence.Job) string {
	var b strings.Builder
	put := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	put("1")
	put(strconv.Itoa(len(jobs)))
	put(h.token)
	put(strconv.FormatInt(h.seq, 10))
	put(formatFloat(h.fetchedAt))
	for _, j := range jobs {
		put(j.ID)
		put(strconv.Itoa(j.RetryCount))
		put(formatFloat(persistence.UnixSeconds(j.PerformAt)))
		put(j.Error)
		put(strconv.Itoa(2 * len(j.Payloads)))
		for _, p := range j.Payloads {
			put(string(p.Data))
			put(formatFloat(p.Score))
		}
	}
	return b.String()
}

// countOfHeader reads n from the first bytes of an encoded batch (enough to
// hold "1:1" and the count); 0 when there is no record.
func countOfHeader(prefix string) int64 {
	if prefix == "" {
		return 0
	}
	r := &fieldReader{s: prefix}
	if v, err := r.next(); err != nil || v != "1" {
		return 0
	}
	n, err := r.int()
	if err != nil {
		return 0
	}
	return n
}

// splitToken splits a lease token "<epoch>/<owner>".
func splitToken(token string) (epoch int64, owner string, ok bool) {
	e, o, found := strings.Cut(token, "/")
	if !found {
		return 0, "", false
	}
	v, err := strconv.ParseInt(e, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return v, o, true
}

// formatFloat formats a score or time so that Redis and Lua read back the
// same float64.
func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
