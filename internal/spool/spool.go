// Package spool keeps enqueues that the store or node could not take in an
// append-only local file, and sends them later in the order they were made
// (docs/contract.md §6.7). The Go client (client.Config.Spool) and the CLI
// (orderly enqueue --spool, orderly spool) use it; the file format is
// theirs alike, so either can drain a spool the other wrote.
//
// A directory holds one spool: segment files (NNN.seg) of framed records
// (format.go), a cursor file naming the first record not yet sent, a lock
// file that one process holds (flock) while it owns the spool, and
// rejected.seg, which keeps the records the store refused for good.
package spool

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Defaults of Options.
const (
	DefaultMaxBytes     = 256 << 20
	DefaultSegmentBytes = 8 << 20
	DefaultSyncEvery    = time.Second
)

// Sync is when appended records are forced to disk (fsync).
type Sync int

// The sync policies. A record whose append returned survives the
// producer's crash in every policy (it is in the operating system's
// cache); they differ for a crash of the machine.
const (
	// SyncEveryCall fsyncs each append before it returns: an append that
	// returned survives a power loss.
	SyncEveryCall Sync = iota
	// SyncInterval fsyncs at most every Options.SyncEvery: a power loss
	// may lose the appends of the last interval.
	SyncInterval
	// SyncNever leaves it to the operating system.
	SyncNever
)

// Errors callers branch on.
var (
	// ErrFull is returned by Append when the record would take the spool
	// past Options.MaxBytes: nothing was written.
	ErrFull = errors.New("spool: full")
	// ErrLocked is returned by Open when another process owns the
	// directory.
	ErrLocked = errors.New("spool: directory in use by another process")
	// ErrClosed is returned by the operations of a closed spool.
	ErrClosed = errors.New("spool: closed")
)

// Options configure a spool. The zero value of each field means its
// default.
type Options struct {
	// MaxBytes bounds the bytes of the records not yet sent
	// [DefaultMaxBytes]. The files may hold one segment more.
	MaxBytes int64
	// SegmentBytes is the size at which a new segment file is started
	// [DefaultSegmentBytes]; drained segments are deleted.
	SegmentBytes int64
	// Sync is the fsync policy [SyncEveryCall]; SyncEvery its interval
	// for SyncInterval [DefaultSyncEvery].
	Sync      Sync
	SyncEvery time.Duration
	// Logger receives torn records dropped at open, rejected records and
	// failed syncs [slog.Default()].
	Logger *slog.Logger
}

// Stats describe what a spool holds.
type Stats struct {
	// Records, Jobs and Bytes count what is waiting to be sent.
	Records, Jobs int
	Bytes         int64
	// Oldest is when the oldest waiting record was spooled (zero when
	// none waits).
	Oldest time.Time
	// Rejected counts the jobs the store refused for good while draining
	// (an unknown queue, bad input), kept in rejected.seg.
	Rejected int
	// Down reports that the last attempt to send failed.
	Down bool
}

// position names a place in the segments: a segment's number and an
// offset in it.
type position struct {
	seg uint64
	off int64
}

// recMeta is what the spool keeps in memory of a waiting record.
type recMeta struct {
	queue string
	at    time.Time
	pos   position
	size  int64 // the frame's bytes
	jobs  int
}

// Spool is an open spool directory, owned by this process until Close.
type Spool struct {
	dir  string
	opts Options
	log  *slog.Logger
	lock *os.File

	// drainMu serializes Drain; it is held while records are sent.
	drainMu sync.Mutex
	// syncMu serializes the fsyncs of SyncEveryCall, so that appends made
	// meanwhile share the next one (group commit); synced counts the
	// appends known to be on disk.
	syncMu sync.Mutex
	synced atomic.Uint64

	// mu guards the fields below; it is held across the file writes (and
	// fsyncs) of Append and of a drain's commit.
	mu       sync.Mutex
	segs     []uint64       // live segments, ascending
	w        *os.File       // the last segment, open for appending
	wSize    int64          // its size
	metas    []recMeta      // waiting records, oldest first
	pending  map[string]int // queue and id -> waiting records holding it
	jobs     int
	bytes    int64
	down     bool
	rejected int
	dirty    bool   // written since the last fsync
	written  uint64 // appends written
	closed   bool

	stop chan struct{} // closed by Close; stops the sync loop
	done chan struct{} // closed when the sync loop returned
}

func (o *Options) defaults() {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = DefaultSyncEvery
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

func idKey(queue, id string) string { return queue + "\x00" + id }

func segName(seq uint64) string { return fmt.Sprintf("%020d.seg", seq) }

const (
	cursorFile   = "cursor"
	rejectedFile = "rejected.seg"
	lockFile     = "lock"
)

// Open opens (creating it if need be) the spool in dir, takes its lock
// (ErrLocked when another process holds it), drops a torn last record
// with a warning, and loads what waits.
func Open(dir string, opts Options) (*Spool, error) {
	opts.defaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: create %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Spool{dir: dir, opts: opts, log: opts.Logger, lock: lock, pending: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.load(); err != nil {
		lock.Close()
		return nil, err
	}
	if opts.Sync == SyncInterval {
		go s.syncLoop()
	} else {
		close(s.done)
	}
	return s, nil
}

// load reads the directory: it drops segments already drained, scans the
// others (truncating a torn tail), and opens the last one for appending.
func (s *Spool) load() error {
	st, err := scan(s.dir, true, s.log)
	if err != nil {
		return err
	}
	s.segs, s.metas, s.rejected = st.segs, st.metas, st.rejected
	for _, m := range st.metas {
		s.jobs += m.jobs
		s.bytes += m.size
	}
	for k, n := range st.pending {
		s.pending[k] = n
	}
	if len(s.segs) == 0 {
		// Number the new segment past the cursor's, which it then names.
		seq := st.cur.seg + 1
		if err := s.newSegment(seq); err != nil {
			return err
		}
		return writeCursor(s.dir, position{seg: seq, off: int64(len(magic))})
	}
	last := s.segs[len(s.segs)-1]
	f, err := os.OpenFile(filepath.Join(s.dir, segName(last)), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("spool: open segment: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("spool: open segment: %w", err)
	}
	s.w, s.wSize = f, fi.Size()
	return nil
}

// newSegment starts segment seq and makes it the one appended to. Called
// with mu held (or before the spool is shared).
func (s *Spool) newSegment(seq uint64) error {
	path := filepath.Join(s.dir, segName(seq))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("spool: create segment: %w", err)
	}
	if _, err := f.Write([]byte(magic)); err != nil {
		f.Close()
		return fmt.Errorf("spool: create segment: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("spool: create segment: %w", err)
	}
	syncDir(s.dir)
	if s.w != nil {
		// Always synced before it is closed: a SyncEveryCall append that
		// finds its file closed knows its record is on disk.
		if err := s.w.Sync(); err != nil {
			s.log.Error("spool: sync a segment", "dir", s.dir, "err", err)
		}
		s.w.Close()
	}
	s.w, s.wSize = f, int64(len(magic))
	s.segs = append(s.segs, seq)
	return nil
}

// Held reports whether a call of these jobs must be spooled rather than
// sent: an id of them waits in the spool (sending it now would pass the
// spooled ones), or the last attempt to send failed.
func (s *Spool) Held(queue string, jobs []persistence.NewJob) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heldLocked(queue, jobs)
}

func (s *Spool) heldLocked(queue string, jobs []persistence.NewJob) bool {
	if s.down {
		return true
	}
	for _, j := range jobs {
		if s.pending[idKey(queue, j.ID)] > 0 {
			return true
		}
	}
	return false
}

// AppendIfHeld appends the call when Held says so, and reports whether it
// did. A call found held is appended even if a drain sent the spool's last
// record of its ids meanwhile: spooling is always safe for the order.
func (s *Spool) AppendIfHeld(queue string, jobs []persistence.NewJob, now time.Time) (bool, error) {
	if !s.Held(queue, jobs) {
		return false, nil
	}
	frame, err := encode(Record{Queue: queue, Jobs: jobs, At: now})
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	seq, err := s.appendLocked(frame, queue, jobs, now)
	s.mu.Unlock()
	if err != nil {
		return true, err
	}
	return true, s.syncTo(seq)
}

// Append appends the call: the store or node could not take it. Until a
// drain sends something again, Held holds every call.
func (s *Spool) Append(queue string, jobs []persistence.NewJob, now time.Time) error {
	frame, err := encode(Record{Queue: queue, Jobs: jobs, At: now})
	if err != nil {
		return err
	}
	s.mu.Lock()
	seq, err := s.appendLocked(frame, queue, jobs, now)
	if err == nil {
		s.down = true
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.syncTo(seq)
}

// appendLocked writes a record and returns its number among the appends,
// for syncTo.
func (s *Spool) appendLocked(frame []byte, queue string, jobs []persistence.NewJob, now time.Time) (uint64, error) {
	if s.closed {
		return 0, ErrClosed
	}
	size := int64(len(frame))
	if s.bytes+size > s.opts.MaxBytes {
		return 0, fmt.Errorf("%w: %d bytes wait in %s, and %d more would pass its limit of %d", ErrFull, s.bytes, s.dir, size, s.opts.MaxBytes)
	}
	if s.wSize > int64(len(magic)) && s.wSize+size > s.opts.SegmentBytes {
		if err := s.newSegment(s.segs[len(s.segs)-1] + 1); err != nil {
			return 0, err
		}
	}
	pos := position{seg: s.segs[len(s.segs)-1], off: s.wSize}
	if _, err := s.w.Write(frame); err != nil {
		// Cut a partial write off, so that the next record follows a
		// whole one; a failure of that leaves a torn frame that the
		// next open drops with everything after it.
		_ = s.w.Truncate(s.wSize)
		return 0, fmt.Errorf("spool: append to %s: %w", s.dir, err)
	}
	s.wSize += size
	s.dirty = true
	s.written++
	s.note(pos, size, now, queue, jobs)
	return s.written, nil
}

// syncTo returns once append seq is on disk, under SyncEveryCall: the
// first caller fsyncs what was written so far, and those that wrote
// meanwhile wait for it and find their records synced (group commit). A
// failed fsync is the caller's error; its record stays (a drain sends it).
func (s *Spool) syncTo(seq uint64) error {
	if s.opts.Sync != SyncEveryCall {
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.synced.Load() >= seq {
		return nil
	}
	s.mu.Lock()
	f, upTo := s.w, s.written
	s.mu.Unlock()
	// A file closed meanwhile (a new segment, Close) was synced first.
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("spool: fsync %s: %w", s.dir, err)
	}
	s.synced.Store(upTo)
	return nil
}

// note records a written record in memory.
func (s *Spool) note(pos position, size int64, at time.Time, queue string, jobs []persistence.NewJob) {
	s.metas = append(s.metas, recMeta{queue: queue, at: at, pos: pos, size: size, jobs: len(jobs)})
	s.bytes += size
	s.jobs += len(jobs)
	for _, j := range jobs {
		s.pending[idKey(queue, j.ID)]++
	}
}

func (s *Spool) syncLocked() error {
	if !s.dirty || s.w == nil {
		return nil
	}
	if err := s.w.Sync(); err != nil {
		return err
	}
	s.dirty = false
	return nil
}

// syncLoop fsyncs every SyncEvery under SyncInterval, until Close.
func (s *Spool) syncLoop() {
	defer close(s.done)
	t := time.NewTicker(s.opts.SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		err := s.syncLocked()
		s.mu.Unlock()
		if err != nil {
			s.log.Error("spool: fsync", "dir", s.dir, "err", err)
		}
	}
}

// Stats reports what waits.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Records: len(s.metas), Jobs: s.jobs, Bytes: s.bytes, Rejected: s.rejected, Down: s.down}
	if len(s.metas) > 0 {
		st.Oldest = s.metas[0].at
	}
	return st
}

// Dir is the spool's directory.
func (s *Spool) Dir() string { return s.dir }

// Close syncs the spool and gives its directory up. It does not drain.
func (s *Spool) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	err := s.syncLocked()
	if cerr := s.w.Close(); err == nil {
		err = cerr
	}
	s.mu.Unlock()
	<-s.done
	s.lock.Close() // releases the flock
	if err != nil {
		return fmt.Errorf("spool: close %s: %w", s.dir, err)
	}
	return nil
}

// readCursor reads the cursor file: the position of the first waiting
// record. ok is false when there is none (or it is unreadable).
func readCursor(dir string, log *slog.Logger) (position, bool) {
	b, err := os.ReadFile(filepath.Join(dir, cursorFile))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			log.Warn("spool: unreadable cursor; sending every record kept again", "dir", dir, "err", err)
		}
		return position{}, false
	}
	f := strings.Fields(string(b))
	if len(f) == 2 {
		seg, err1 := strconv.ParseUint(f[0], 10, 64)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 == nil && err2 == nil && off >= int64(len(magic)) {
			return position{seg: seg, off: off}, true
		}
	}
	log.Warn("spool: malformed cursor; sending every record kept again", "dir", dir)
	return position{}, false
}

// writeCursor replaces the cursor file (write and rename). It is not
// fsynced: a cursor lost to a machine crash sends records again, which
// the replay rules make harmless (docs/contract.md §6.7).
func writeCursor(dir string, p position) error {
	tmp := filepath.Join(dir, cursorFile+".tmp")
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d %d\n", p.seg, p.off)), 0o600); err != nil {
		return fmt.Errorf("spool: write cursor: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, cursorFile)); err != nil {
		return fmt.Errorf("spool: write cursor: %w", err)
	}
	return nil
}

// syncDir fsyncs a directory, so that a new file's name survives a crash.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
