package redisstore

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

func sampleBatch() (batchHeader, []persistence.Job) {
	h := batchHeader{token: "7/node-a", seq: 3, fetchedAt: 1700000000.25}
	jobs := []persistence.Job{
		{ID: "a:{b}", RetryCount: -1, PerformAt: time.Unix(1700000000, 0), Payloads: []persistence.Payload{{Data: []byte("x"), Score: 1}, {Data: []byte{0, 1, ':'}, Score: 2.5}}},
		{ID: "日本", RetryCount: 3, PerformAt: time.Unix(1700000001, 500000000), Error: "boom: 12:3", Payloads: []persistence.Payload{{Data: []byte{}, Score: -1e300}}},
	}
	return h, jobs
}

func TestCodecRoundTrip(t *testing.T) {
	h, jobs := sampleBatch()
	enc := encodeBatch(h, jobs)
	gh, got, err := decodeBatch(enc)
	require.NoError(t, err)
	require.Equal(t, 2, gh.n)
	require.Equal(t, int64(7), gh.epoch)
	require.Equal(t, "node-a", gh.owner)
	require.Equal(t, int64(3), gh.seq)
	require.Equal(t, h.fetchedAt, gh.fetchedAt)
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

func TestCodecRejectsCorruptInput(t *testing.T) {
	h, jobs := sampleBatch()
	enc := encodeBatch(h, jobs)
	for _, bad := range []string{"", "1:2", "x:1", "1:1", enc[:len(enc)-1], enc + "0:", "99999999999:1", "1:11:2", "-1:"} {
		_, _, err := decodeBatch(bad)
		require.Error(t, err, "%q", bad)
	}
}

// FuzzDecodeBatch feeds arbitrary bytes to the decoder of in-flight records:
// it must never panic, and what it accepts must encode back to an equivalent
// record.
func FuzzDecodeBatch(f *testing.F) {
	h, jobs := sampleBatch()
	f.Add(encodeBatch(h, jobs))
	f.Add(encodeBatch(batchHeader{token: "1/n", seq: 1}, nil))
	f.Add("1:11:01:x1:11:0")
	f.Add("1:11:1")
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
		_, got, err := decodeBatch(encodeBatch(batchHeader{token: "1/n", seq: 1}, jobs))
		require.NoError(t, err)
		require.Equal(t, id, got[0].ID)
		require.Equal(t, errText, got[0].Error)
		require.Equal(t, int(rc), got[0].RetryCount)
		require.Equal(t, string(payload), string(got[0].Payloads[0].Data))
		require.Equal(t, score, got[0].Payloads[0].Score)
	})
}
