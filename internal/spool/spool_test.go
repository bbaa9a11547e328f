package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// sent records what a Sender was given.
type sent struct {
	calls [][]persistence.NewJob
	fail  error // returned instead of taking the jobs, when set
}

func (s *sent) send(_ context.Context, _ string, jobs []persistence.NewJob) error {
	if s.fail != nil {
		return s.fail
	}
	s.calls = append(s.calls, jobs)
	return nil
}

func (s *sent) payloads() []string {
	var out []string
	for _, c := range s.calls {
		for _, j := range c {
			out = append(out, j.ID+"="+string(j.Payload))
		}
	}
	return out
}

var errBad = errors.New("bad input")

func permanent(err error) bool { return errors.Is(err, errBad) }

func job(id, payload string) persistence.NewJob {
	return persistence.NewJob{ID: id, Payload: []byte(payload)}
}

func open(t *testing.T, dir string, o Options) *Spool {
	t.Helper()
	s, err := Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// logBuffer returns a logger writing to a buffer.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

// TestRoundTrip checks that every field of a job survives the file, and
// that records come back in order after a reopen.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	now := time.Unix(1_700_000_000, 123456789)
	full := persistence.NewJob{ID: "a", Payload: []byte{0, 1, 2}, Score: ptr(1.5), PerformAt: now.Add(time.Minute),
		Headers: map[string]string{"k": "v"}, DedupKey: "key", ExpiresAt: now.Add(time.Hour), Priority: 3}
	require.NoError(t, s.Append("q", []persistence.NewJob{full, job("b", "x")}, now))
	require.NoError(t, s.Append("q", []persistence.NewJob{job("a", "y")}, now.Add(time.Second)))
	require.NoError(t, s.Close())

	s = open(t, dir, Options{})
	st := s.Stats()
	require.Equal(t, 2, st.Records)
	require.Equal(t, 3, st.Jobs)
	require.True(t, st.Oldest.Equal(now))
	var got sent
	res, err := s.Drain(context.Background(), got.send, permanent)
	require.NoError(t, err)
	require.Equal(t, 3, res.Sent)
	require.Len(t, got.calls, 1, "consecutive records of one queue go in one call")
	require.Equal(t, []string{"a=\x00\x01\x02", "b=x", "a=y"}, got.payloads())
	g := got.calls[0][0]
	require.Equal(t, full.ID, g.ID)
	require.Equal(t, *full.Score, *g.Score)
	require.True(t, full.PerformAt.Equal(g.PerformAt))
	require.True(t, full.ExpiresAt.Equal(g.ExpiresAt))
	require.Equal(t, full.Headers, g.Headers)
	require.Equal(t, full.DedupKey, g.DedupKey)
	require.Equal(t, full.Priority, g.Priority)
	require.Nil(t, got.calls[0][1].Score)
	require.True(t, got.calls[0][1].PerformAt.IsZero())
	require.Equal(t, Stats{}, s.Stats())
}

func ptr(v float64) *float64 { return &v }

// lastSegment returns the path of the newest segment of dir.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	require.NoError(t, err)
	require.NotEmpty(t, m)
	return m[len(m)-1]
}

// TestTornTail checks that a record cut short, or one whose checksum fails,
// is dropped with a warning at open, and that the spool goes on after it.
func TestTornTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		harm func(t *testing.T, path string)
	}{
		{"cut short", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path, fi.Size()-3))
		}},
		{"header cut short", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte{0, 0, 1})
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{"checksum", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b[len(b)-2] ^= 0x20
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, Options{})
			require.NoError(t, s.Append("q", []persistence.NewJob{job("a", "1")}, time.Now()))
			require.NoError(t, s.Append("q", []persistence.NewJob{job("a", "2")}, time.Now()))
			if tc.name == "header cut short" {
				require.NoError(t, s.Append("q", []persistence.NewJob{job("a", "3")}, time.Now()))
			}
			require.NoError(t, s.Close())
			tc.harm(t, lastSegment(t, dir))

			st, err := Inspect(dir, nil)
			require.NoError(t, err)
			wantJobs := 1
			if tc.name == "header cut short" {
				wantJobs = 3
			}
			require.Equal(t, wantJobs, st.Jobs, "Inspect sees the whole records")

			log, buf := logBuffer()
			s = open(t, dir, Options{Logger: log})
			require.Contains(t, buf.String(), "torn")
			require.NoError(t, s.Append("q", []persistence.NewJob{job("a", "4")}, time.Now()))
			var got sent
			_, err = s.Drain(context.Background(), got.send, permanent)
			require.NoError(t, err)
			want := []string{"a=1", "a=4"}
			if tc.name == "header cut short" {
				want = []string{"a=1", "a=2", "a=3", "a=4"}
			}
			require.Equal(t, want, got.payloads())
		})
	}
}

// TestDamagedRecord checks that a record damaged in the middle of a
// segment is reported as an error (not a torn tail), and that what follows
// it in the segment is dropped with it rather than read out of frame.
func TestDamagedRecord(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	require.NoError(t, s.Append("q", []persistence.NewJob{job("a", "first")}, time.Now()))
	require.NoError(t, s.Append("q", []persistence.NewJob{job("a", "second")}, time.Now()))
	require.NoError(t, s.Close())
	path := lastSegment(t, dir)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	i := bytes.Index(b, []byte("Zmlyc3Q")) // "first" in base64
	require.Positive(t, i)
	b[i] ^= 0x01
	require.NoError(t, os.WriteFile(path, b, 0o600))

	log, buf := logBuffer()
	s = open(t, dir, Options{Logger: log})
	require.Contains(t, buf.String(), "level=ERROR")
	require.Contains(t, buf.String(), "damaged")
	require.Equal(t, 0, s.Stats().Jobs)
}

// FuzzOpen checks that no segment content makes Open or Inspect panic,
// and that Open leaves a spool that takes appends.
func FuzzOpen(f *testing.F) {
	frame, err := encode(Record{Queue: "q", Jobs: []persistence.NewJob{job("a", "1")}, At: time.Unix(1, 0)})
	require.NoError(f, err)
	f.Add(append([]byte(magic), frame...))
	f.Add(append([]byte(magic), frame[:len(frame)-1]...))
	f.Add([]byte(magic[:3]))
	f.Fuzz(func(t *testing.T, seg []byte) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, segName(1)), seg, 0o600))
		_, _ = Inspect(dir, nil)
		s, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return // not a segment: refused with an error
		}
		defer s.Close()
		require.NoError(t, s.Append("q", []persistence.NewJob{job("b", "2")}, time.Now()))
		var got sent
		_, err = s.Drain(context.Background(), got.send, permanent)
		require.NoError(t, err)
		require.NotEmpty(t, got.calls)
	})
}

// TestBound checks that an append past MaxBytes fails with ErrFull and
// writes nothing, and that draining makes room again.
func TestBound(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{MaxBytes: 300})
	n := 0
	var err error
	for ; n < 100; n++ {
		if err = s.Append("q", []persistence.NewJob{job("a", fmt.Sprint(n))}, time.Now()); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, ErrFull)
	require.Positive(t, n)
	st := s.Stats()
	require.Equal(t, n, st.Jobs)
	require.LessOrEqual(t, st.Bytes, int64(300))
	var got sent
	res, err := s.Drain(context.Background(), got.send, permanent)
	require.NoError(t, err)
	require.Equal(t, n, res.Sent, "nothing refused was kept, nothing kept was lost")
	require.NoError(t, s.Append("q", []persistence.NewJob{job("a", "again")}, time.Now()))
}

// TestHeldAndOrder checks that an id with spooled jobs holds later calls of
// it until a drain sent them, that a failed send keeps everything and
// holds every call, and that the drain sends in spool order.
func TestHeldAndOrder(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	require.False(t, s.Held("q", []persistence.NewJob{job("a", "")}))
	require.NoError(t, s.Append("q", []persistence.NewJob{job("a", "1")}, time.Now()))
	require.True(t, s.Held("q", []persistence.NewJob{job("b", "")}), "a failed send holds every call")

	down := &sent{fail: errors.New("connection refused")}
	_, err := s.Drain(ctx, down.send, permanent)
	require.Error(t, err)
	require.True(t, s.Stats().Down)
	held, err := s.AppendIfHeld("q", []persistence.NewJob{job("a", "2")}, time.Now())
	require.NoError(t, err)
	require.True(t, held)

	var got sent
	_, err = s.Drain(ctx, got.send, permanent)
	require.NoError(t, err)
	require.Equal(t, []string{"a=1", "a=2"}, got.payloads())
	require.False(t, s.Held("q", []persistence.NewJob{job("a", "")}))
	held, err = s.AppendIfHeld("q", []persistence.NewJob{job("a", "3")}, time.Now())
	require.NoError(t, err)
	require.False(t, held)
	require.Zero(t, s.Stats().Jobs)
}

// TestReject checks that a record refused for good is kept in
// rejected.seg, counted, and does not block the others, which keep their
// order.
func TestReject(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	for _, p := range []string{"1", "bad", "3"} {
		require.NoError(t, s.Append("q", []persistence.NewJob{job("a", p)}, time.Now()))
	}
	var got sent
	send := func(ctx context.Context, q string, jobs []persistence.NewJob) error {
		for _, j := range jobs {
			if string(j.Payload) == "bad" {
				return errBad
			}
		}
		return got.send(ctx, q, jobs)
	}
	res, err := s.Drain(context.Background(), send, permanent)
	require.NoError(t, err)
	require.Equal(t, DrainResult{Sent: 2, Rejected: 1}, res)
	require.Equal(t, []string{"a=1", "a=3"}, got.payloads())
	require.Equal(t, 1, s.Stats().Rejected)
	require.NoError(t, s.Close())
	st, err := Inspect(dir, nil)
	require.NoError(t, err)
	require.Equal(t, Stats{Rejected: 1}, st)
}

// TestSegments checks that records span segments, that drained segments
// are deleted, and that a reopen after a partial drain resumes after the
// cursor.
func TestSegments(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{SegmentBytes: 200})
	for i := range 20 {
		require.NoError(t, s.Append("q", []persistence.NewJob{job(fmt.Sprint("id", i%3), fmt.Sprint(i))}, time.Now()))
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	require.Greater(t, len(segs), 3)
	// Send the first 7 records only, then "crash".
	var got sent
	n := 0
	_, err := s.Drain(context.Background(), func(ctx context.Context, q string, jobs []persistence.NewJob) error {
		if n+len(jobs) > 7 {
			return errors.New("gone")
		}
		n += len(jobs)
		return got.send(ctx, q, jobs)
	}, permanent)
	require.Error(t, err)
	require.NoError(t, s.Close())

	s = open(t, dir, Options{SegmentBytes: 200})
	require.Equal(t, 20-n, s.Stats().Jobs)
	_, err = s.Drain(context.Background(), got.send, permanent)
	require.NoError(t, err)
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprint("id", i%3, "=", i))
	}
	require.Equal(t, want, got.payloads())
	left, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	require.Len(t, left, 1, "drained segments are deleted")
}

// TestLock checks that a second owner of a directory gets ErrLocked, and
// that Close gives the directory up.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	_, err = Open(dir, Options{})
	require.ErrorIs(t, err, ErrLocked)
	require.ErrorContains(t, err, fmt.Sprint("process ", os.Getpid()))
	require.NoError(t, s.Close())
	s, err = Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// TestSyncPolicies checks that every policy keeps what was appended across
// a close and reopen.
func TestSyncPolicies(t *testing.T) {
	for _, p := range []Sync{SyncEveryCall, SyncInterval, SyncNever} {
		dir := t.TempDir()
		s := open(t, dir, Options{Sync: p, SyncEvery: 10 * time.Millisecond})
		require.NoError(t, s.Append("q", []persistence.NewJob{job("a", "1")}, time.Now()))
		require.NoError(t, s.Close())
		st, err := Inspect(dir, nil)
		require.NoError(t, err)
		require.Equal(t, 1, st.Jobs, "policy %d", p)
	}
}

// TestConcurrentAppends checks that appends from many goroutines under the
// every-call policy (which share fsyncs) all land, whole, and that each
// goroutine's records keep its order, across segments.
func TestConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{SegmentBytes: 4 << 10})
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.Append("q", []persistence.NewJob{job(fmt.Sprint("w", w), fmt.Sprint(i))}, time.Now()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, s.Close())
	s = open(t, dir, Options{})
	var got sent
	_, err := s.Drain(context.Background(), got.send, permanent)
	require.NoError(t, err)
	next := map[string]int{}
	for _, c := range got.calls {
		for _, j := range c {
			require.Equal(t, fmt.Sprint(next[j.ID]), string(j.Payload), "writer %s in order", j.ID)
			next[j.ID]++
		}
	}
	require.Len(t, next, writers)
	for _, n := range next {
		require.Equal(t, each, n)
	}
}

// BenchmarkAppendParallel measures spooled calls made from several
// goroutines under the every-call policy, which share fsyncs.
func BenchmarkAppendParallel(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	require.NoError(b, err)
	defer s.Close()
	jobs := []persistence.NewJob{{ID: "a", Payload: bytes.Repeat([]byte("x"), 100)}}
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Append("q", jobs, time.Now()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAppend measures a spooled call of one 100-byte job under each
// fsync policy, and a drain of what was appended.
func BenchmarkAppend(b *testing.B) {
	payload := bytes.Repeat([]byte("x"), 100)
	for _, p := range []struct {
		name string
		sync Sync
	}{{"every-call", SyncEveryCall}, {"interval", SyncInterval}, {"never", SyncNever}} {
		b.Run(p.name, func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{Sync: p.sync})
			require.NoError(b, err)
			defer s.Close()
			jobs := []persistence.NewJob{{ID: "a", Payload: payload}}
			now := time.Now()
			for b.Loop() {
				if err := s.Append("q", jobs, now); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			res, err := s.Drain(context.Background(), func(context.Context, string, []persistence.NewJob) error { return nil }, permanent)
			require.NoError(b, err)
			require.Equal(b, b.N, res.Sent)
		})
	}
}
