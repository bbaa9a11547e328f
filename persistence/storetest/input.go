package storetest

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Bad input and arbitrary bytes (docs/contract.md §7).

var inputTests = []testCase{
	{"BadInput_RejectedBatchWritesNothing", testBadInput, needNone},
	{"ArbitraryBytesSurvive", testArbitraryBytes, needNone},
}

// docs/contract.md §7: bad input is rejected with an error naming the field,
// and a rejected batch writes nothing.
func testBadInput(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name  string
		bad   persistence.NewJob
		field string
	}{
		{"empty id", persistence.NewJob{ID: ""}, "id"},
		{"long id", persistence.NewJob{ID: strings.Repeat("x", persistence.MaxIDBytes+1)}, "id"},
		{"invalid utf-8 id", persistence.NewJob{ID: "a\xff"}, "id"},
		{"NaN score", persistence.NewJob{ID: "a", Score: &nan}, "score"},
		{"Inf score", persistence.NewJob{ID: "a", Score: &inf}, "score"},
		{"big payload", persistence.NewJob{ID: "a", Payload: make([]byte, persistence.DefaultMaxPayloadBytes+1)}, "payload"},
		{"perform_at before 1970", persistence.NewJob{ID: "a", PerformAt: time.Unix(-5, 0)}, "perform_at"},
		{"perform_at far future", persistence.NewJob{ID: "a", PerformAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}, "perform_at"},
	}
	for _, c := range cases {
		err := e.s.Enqueue(e.ctx, e.queue, []persistence.NewJob{job("good", "v", 1), c.bad})
		var fe *persistence.FieldError
		require.ErrorAs(t, err, &fe, c.name)
		require.Equal(t, c.field, fe.Field, c.name)
		require.Equal(t, 1, fe.Index, c.name)
		require.ErrorIs(t, err, persistence.ErrInvalid)
	}
	require.EqualValues(t, 0, e.stats().Length, "nothing of a rejected batch was written")
	require.NoError(t, e.s.Enqueue(e.ctx, e.queue, []persistence.NewJob{{ID: strings.Repeat("x", persistence.MaxIDBytes), Payload: make([]byte, persistence.DefaultMaxPayloadBytes)}}))

	err := e.s.Enqueue(e.ctx, "missing", []persistence.NewJob{job("a", "v", 1)})
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
	err = e.s.Enqueue(e.ctx, "bad{name}", []persistence.NewJob{job("a", "v", 1)})
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "queue", fe.Field)
	require.NoError(t, e.s.Enqueue(e.ctx, e.queue, nil))
	_, err = e.s.GetJob(e.ctx, e.queue, "")
	require.ErrorAs(t, err, &fe)
}

// Ids and payloads with arbitrary bytes survive the store unchanged.
func testArbitraryBytes(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	idList := []string{"a:b", "{x}", "}{", "{", "}", "日本語", "nul\x00byte", "p:x", "m:y", "due", ":", "emoji 🙂", strings.Repeat("é", 256)}
	var jobs []persistence.NewJob
	for i, id := range idList {
		jobs = append(jobs, persistence.NewJob{ID: id, Payload: append([]byte{byte(i)}, all...), Score: score(float64(i + 1))})
		jobs = append(jobs, persistence.NewJob{ID: id, Payload: []byte("{}:" + id), Score: score(0.1)})
	}
	e.enqueue(jobs...)
	require.EqualValues(t, len(idList), e.stats().Length)
	for i, id := range idList {
		j := e.get(id)
		require.NotNil(t, j, "%q", id)
		require.Len(t, j.Payloads, 2, "%q", id)
		require.Equal(t, []byte("{}:"+id), j.Payloads[0].Data)
		require.Equal(t, append([]byte{byte(i)}, all...), j.Payloads[1].Data)
	}
	got := map[string]bool{}
	for sh := range 4 {
		o := e.own(sh)
		for res := o.next(100); res.Batch != nil; res = o.next(100) {
			for _, j := range res.Batch.Jobs {
				require.Len(t, j.Payloads, 2)
				got[j.ID] = true
			}
		}
	}
	require.Len(t, got, len(idList))
	for _, id := range idList {
		require.True(t, got[id], "%q", id)
	}
}
