package redisstore

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// putField is the Go twin of lib/fields.lua's fld.
func putField(b *strings.Builder, s string) {
	n := len(s)
	for n >= 0x80 {
		b.WriteByte(byte(n&0x7f | 0x80))
		n >>= 7
	}
	b.WriteByte(byte(n))
	b.WriteString(s)
}

// encodeBatch is the Go twin of lib/batch.lua's encode_batch.
func encodeBatch(h batchHeader, jobs []persistence.Job) string {
	var b strings.Builder
	putField(&b, "2")
	putField(&b, strconv.Itoa(len(jobs)))
	putField(&b, h.token)
	putField(&b, strconv.FormatInt(h.seq, 10))
	putField(&b, formatFloat(h.fetchedAt))
	bound := ""
	if !h.bound.IsZero() {
		bound = formatFloat(persistence.UnixSeconds(h.bound))
	}
	putField(&b, bound)
	putField(&b, "")
	for _, j := range jobs {
		putField(&b, j.ID)
		putField(&b, encodeRecord(record{at: persistence.UnixSeconds(j.PerformAt), rc: j.RetryCount, err: j.Error, payloads: j.Payloads}, ""))
	}
	return b.String()
}

// encodeRecord is the Go twin of lib/cold.lua's rec_encode.
func encodeRecord(r record, fseq string) string {
	var b strings.Builder
	flags := byte(0)
	if fseq != "" {
		flags |= flagFifo
	}
	if r.err != "" {
		flags |= flagError
	}
	if !r.hold.IsZero() {
		flags |= flagHold
	}
	if r.overflow > 0 {
		flags |= flagOverflow
	}
	hdrs := false
	for _, p := range r.payloads {
		if len(p.Headers) > 0 {
			hdrs = true
		}
	}
	if hdrs {
		flags |= flagHeaders
	}
	b.WriteByte(flags)
	at := formatFloat(r.at)
	putField(&b, at)
	putField(&b, strconv.Itoa(r.rc))
	if fseq != "" {
		putField(&b, fseq)
	}
	if r.err != "" {
		putField(&b, r.err)
	}
	if !r.hold.IsZero() {
		putField(&b, formatFloat(persistence.UnixSeconds(r.hold)))
	}
	if r.overflow > 0 {
		putField(&b, strconv.Itoa(r.overflow))
	}
	for _, p := range r.payloads {
		sc := formatFloat(p.Score)
		if sc == at {
			sc = ""
		}
		putField(&b, sc)
		putField(&b, string(p.Data))
		if hdrs {
			putField(&b, encodeHeaders(p.Headers, p.ExpiresAt))
		}
	}
	return b.String()
}

func sampleBatch() (batchHeader, []persistence.Job) {
	h := batchHeader{token: "1700000000123/node-a/00ff", seq: 3, fetchedAt: 1700000000.25, bound: time.Unix(1700000030, 0)}
	jobs := []persistence.Job{
		{ID: "a:{b}", RetryCount: -1, PerformAt: time.Unix(1700000000, 0), Payloads: []persistence.Payload{{Data: []byte("x"), Score: 1}, {Data: []byte{0, 1, ':'}, Score: 2.5}}},
		{ID: "日本", RetryCount: 3, PerformAt: time.Unix(1700000001, 500000000), Error: "boom: 12:3", Payloads: []persistence.Payload{{Data: make([]byte, 300), Score: -1e300}}},
	}
	return h, jobs
}

func TestCodecRoundTrip(t *testing.T) {
	h, jobs := sampleBatch()
	enc := encodeBatch(h, jobs)
	gh, got, err := decodeBatch(enc)
	require.NoError(t, err)
	require.Equal(t, 2, gh.n)
	require.Equal(t, int64(1700000000123), gh.epoch)
	require.Equal(t, "node-a", gh.owner)
	require.Equal(t, int64(3), gh.seq)
	require.Equal(t, h.fetchedAt, gh.fetchedAt)
	require.True(t, h.bound.Equal(gh.bound))
	for i := range jobs {
		jobs[i].PayloadCount = len(jobs[i].Payloads)
		require.Equal(t, jobs[i].ID, got[i].ID)
		require.Equal(t, jobs[i].Payloads, got[i].Payloads)
		require.True(t, jobs[i].PerformAt.Equal(got[i].PerformAt))
		require.Equal(t, jobs[i].Error, got[i].Error)
		require.Equal(t, jobs[i].RetryCount, got[i].RetryCount)
	}
	require.EqualValues(t, 2, countOfHeader(enc[:min(64, len(enc))]))
}

func TestRecordRoundTrip(t *testing.T) {
	r := record{at: 1700000000.5, rc: 2, err: "boom", hold: time.Unix(1700000100, 0), overflow: 7,
		payloads: []persistence.Payload{{Data: []byte("a"), Score: 1700000000.5}, {Data: make([]byte, 200), Score: 3}}}
	got, err := decodeRecord(encodeRecord(r, "12"), false)
	require.NoError(t, err)
	require.Equal(t, r.at, got.at)
	require.Equal(t, r.rc, got.rc)
	require.Equal(t, r.err, got.err)
	require.True(t, r.hold.Equal(got.hold))
	require.Equal(t, r.overflow, got.overflow)
	require.Equal(t, r.payloads, got.payloads)
	require.Equal(t, 9, got.count())
}

func TestSplitToken(t *testing.T) {
	for token, want := range map[string]struct {
		epoch int64
		owner string
	}{
		"1700000000123/node-a/00ff":  {1700000000123, "node-a"},
		"1700000000123/a/b/00ff":     {1700000000123, "a/b"},
		"5/node-a":                   {5, "node-a"},
		"0/orderly-layout-2":         {0, "orderly-layout-2"},
		"1700000000123/node-a/" + "": {1700000000123, "node-a"},
	} {
		e, o, ok := splitToken(token)
		require.True(t, ok, token)
		require.Equal(t, want.epoch, e, token)
		require.Equal(t, want.owner, o, token)
	}
	_, _, ok := splitToken("nope")
	require.False(t, ok)
}

func TestCodecRejectsCorruptInput(t *testing.T) {
	h, jobs := sampleBatch()
	enc := encodeBatch(h, jobs)
	for _, bad := range []string{"", "\x012", "\x011\x011", "\x012\x01x", enc[:len(enc)-1], enc + "\x00", "\xff\xff\xff\xff\xff\x01", "\x012\x012"} {
		_, _, err := decodeBatch(bad)
		require.Error(t, err, "%q", bad)
	}
	for _, bad := range []string{"", "\x00", "\x00\x01", "\x00\x011\x01x", "\x04\x011\x02-1\x01x", "\x00\x011\x02-1\x01"} {
		_, err := decodeRecord(bad, false)
		require.Error(t, err, "%q", bad)
	}
}

// FuzzDecodeBatch feeds arbitrary bytes to the decoder of in-flight records:
// it must never panic, and what it accepts must encode back to an equivalent
// record.
func FuzzDecodeBatch(f *testing.F) {
	h, jobs := sampleBatch()
	f.Add(encodeBatch(h, jobs))
	f.Add(encodeBatch(batchHeader{token: "1/n/x", seq: 1}, nil))
	f.Add("\x012\x011\x011\x011\x011\x00\x00\x01a\x06\x00\x011\x02-1")
	f.Fuzz(func(t *testing.T, s string) {
		h, jobs, err := decodeBatch(s)
		if err != nil {
			return
		}
		again := encodeBatch(h, jobs)
		h2, jobs2, err := decodeBatch(again)
		require.NoError(t, err)
		require.Equal(t, h.token, h2.token)
		require.Equal(t, len(jobs), len(jobs2))
		for i := range jobs {
			require.Equal(t, jobs[i].ID, jobs2[i].ID)
			require.Equal(t, len(jobs[i].Payloads), len(jobs2[i].Payloads))
		}
	})
}

// FuzzDecodeRecord feeds arbitrary bytes to the decoder of job records.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(record{at: 1, rc: -1, payloads: []persistence.Payload{{Data: []byte("x"), Score: 1}}}, "3"))
	f.Add(encodeRecord(record{at: 1, rc: 4, err: "e", overflow: 2, hold: time.Unix(9, 0)}, ""))
	f.Add(encodeRecord(record{at: 1, rc: -1, payloads: []persistence.Payload{
		{Data: []byte("x"), Score: 1, Headers: map[string]string{"traceparent": "00-ab-cd-01", "k": ""}},
		{Data: []byte("y"), Score: 2},
	}}, "3"))
	f.Fuzz(func(t *testing.T, s string) {
		r, err := decodeRecord(s, false)
		if err != nil {
			return
		}
		got, err := decodeRecord(encodeRecord(r, ""), false)
		require.NoError(t, err)
		require.Equal(t, r.rc, got.rc)
		require.Equal(t, len(r.payloads), len(got.payloads))
		for i := range r.payloads {
			if len(r.payloads[i].Headers) > 0 {
				require.Equal(t, r.payloads[i].Headers, got.payloads[i].Headers)
			}
		}
	})
}

// FuzzCodecRoundTrip encodes arbitrary ids, payloads, errors and scores.
func FuzzCodecRoundTrip(f *testing.F) {
	f.Add("id", []byte("payload"), "err", 1.5, int64(3))
	f.Add("{}:", []byte{0, 255, ':'}, "", -1e-300, int64(-1))
	f.Fuzz(func(t *testing.T, id string, payload []byte, errText string, score float64, rc int64) {
		if math.IsNaN(score) {
			return
		}
		jobs := []persistence.Job{{ID: id, RetryCount: int(rc), Error: errText, PerformAt: time.Unix(1700000000, 0),
			Payloads: []persistence.Payload{{Data: payload, Score: score}}}}
		_, got, err := decodeBatch(encodeBatch(batchHeader{token: "1/n/x", seq: 1}, jobs))
		require.NoError(t, err)
		require.Equal(t, id, got[0].ID)
		require.Equal(t, errText, got[0].Error)
		require.Equal(t, int(rc), got[0].RetryCount)
		require.Equal(t, string(payload), string(got[0].Payloads[0].Data))
		require.Equal(t, score, got[0].Payloads[0].Score)
	})
}

// FuzzHeadersRoundTrip checks that headers and an expiry survive their
// encoding, the expiry never showing as a header.
func FuzzHeadersRoundTrip(f *testing.F) {
	f.Add("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tenant", "", int64(0))
	f.Add("\x00", string(make([]byte, 200)), "b", "\xff", int64(1700000000123))
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, expMS int64) {
		if k1 == "" || k2 == "" || expMS < 0 || expMS > persistence.MaxTimeSeconds*1000 {
			t.Skip("user header keys are never empty; expiries are valid times")
		}
		h := map[string]string{k1: v1, k2: v2}
		var exp time.Time
		if expMS > 0 {
			exp = time.UnixMilli(expMS)
		}
		got, gotExp, err := decodeHeaders(encodeHeaders(h, exp))
		require.NoError(t, err)
		require.Equal(t, h, got)
		require.True(t, exp.Equal(gotExp), "expiry %v came back as %v", exp, gotExp)
		require.Equal(t, encodeHeaders(h, exp), encodeHeaders(got, gotExp))
	})
}

// TestExpiryIsTheEmptyHeader checks the encoding of an expiry (docs/storage.md
// §3): the pair with the empty key, first; hidden from the headers decoded.
func TestExpiryIsTheEmptyHeader(t *testing.T) {
	exp := time.UnixMilli(1700000600500)
	enc := encodeHeaders(map[string]string{"a": "1"}, exp)
	require.Equal(t, "\x00\x0d1700000600500\x01a\x011", enc)
	h, got, err := decodeHeaders(enc)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "1"}, h)
	require.True(t, exp.Equal(got))

	// An expiry alone: no user headers (nil, as a payload without any).
	h, got, err = decodeHeaders(encodeHeaders(nil, exp))
	require.NoError(t, err)
	require.Nil(t, h)
	require.True(t, exp.Equal(got))
	require.Empty(t, encodeHeaders(nil, time.Time{}))

	// A decimal expires_at keeps its milliseconds: 1795854836.984 is a
	// float a little below them, rounded, not truncated, to the millisecond.
	_, got, err = decodeHeaders(encodeHeaders(nil, persistence.FromUnixSeconds(1795854836.984)))
	require.NoError(t, err)
	require.Equal(t, int64(1795854836984), got.UnixMilli())
}

// countOfHeader reads n from the first bytes of an encoded batch; 0 when
// there is no record.
func countOfHeader(prefix string) int64 {
	r := &fieldReader{s: prefix}
	if v, err := r.next(); err != nil || v != "2" {
		return 0
	}
	n, err := r.int()
	if err != nil {
		return 0
	}
	return n
}
