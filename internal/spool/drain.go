package spool

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/orderlyhq/orderly/persistence"
)

// Limits of one send of a drain: consecutive records of one queue are sent
// together, up to these.
const (
	maxSendJobs  = 1000
	maxSendBytes = 4 << 20
)

// Sender sends the jobs of one call to the store or node. Its error is
// either permanent (the store refused them for good: bad input, an unknown
// queue) or not (the store could not take them now).
type Sender func(ctx context.Context, queue string, jobs []persistence.NewJob) error

// DrainResult counts the jobs of a drain: sent, and rejected for good
// (moved to rejected.seg).
type DrainResult struct {
	Sent, Rejected int
}

// Drain sends the waiting records in the order they were spooled, one
// queue's consecutive records together, until none waits, and returns
// nil; or until a send fails for a reason permanent does not accept (the
// store is still away), returning that error (and Held holds every call
// until a drain sends again). A record that permanent errors are returned
// for, sent alone, is moved to rejected.seg with an error log and counted
// in Stats.Rejected: it never blocks the records behind it. One drain runs
// at a time.
func (s *Spool) Drain(ctx context.Context, send Sender, permanent func(error) bool) (DrainResult, error) {
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	var res DrainResult
	files := map[uint64]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	limit := maxSendJobs
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		batch, err := s.next(limit)
		if err != nil || len(batch) == 0 {
			return res, err
		}
		recs, err := s.read(files, batch)
		if err != nil {
			return res, err
		}
		var jobs []persistence.NewJob
		for _, r := range recs {
			jobs = append(jobs, r.Jobs...)
		}
		serr := send(ctx, batch[0].queue, jobs)
		switch {
		case serr == nil:
			if err := s.commit(batch, recs); err != nil {
				return res, err
			}
			res.Sent += len(jobs)
			limit = maxSendJobs
		case permanent(serr) && len(batch) > 1:
			limit = 1 // find the record at fault
		case permanent(serr):
			if err := s.reject(recs[0], serr); err != nil {
				return res, err
			}
			if err := s.commit(batch, recs); err != nil {
				return res, err
			}
			res.Rejected += len(jobs)
			limit = maxSendJobs
		default:
			s.mu.Lock()
			s.down = true
			s.mu.Unlock()
			return res, fmt.Errorf("spool: send %d spooled jobs to %s: %w", len(jobs), batch[0].queue, serr)
		}
	}
}

// next returns the oldest waiting records of one queue, at most limit
// records and about maxSendJobs jobs and maxSendBytes bytes.
func (s *Spool) next(limit int) ([]recMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	var out []recMeta
	jobs, size := 0, int64(0)
	for _, m := range s.metas {
		if len(out) > 0 && (m.queue != out[0].queue || len(out) >= limit || jobs+m.jobs > maxSendJobs || size+m.size > maxSendBytes) {
			break
		}
		out = append(out, m)
		jobs += m.jobs
		size += m.size
	}
	return out, nil
}

// read reads the records of batch from their segments.
func (s *Spool) read(files map[uint64]*os.File, batch []recMeta) ([]Record, error) {
	recs := make([]Record, len(batch))
	for i, m := range batch {
		f := files[m.pos.seg]
		if f == nil {
			var err error
			f, err = os.Open(filepath.Join(s.dir, segName(m.pos.seg)))
			if err != nil {
				return nil, fmt.Errorf("spool: read a record: %w", err)
			}
			files[m.pos.seg] = f
		}
		buf := make([]byte, m.size)
		if _, err := f.ReadAt(buf, m.pos.off); err != nil {
			return nil, fmt.Errorf("spool: read a record of %s: %w", f.Name(), err)
		}
		body, err := readFrame(bytes.NewReader(buf), m.size)
		if err == nil {
			recs[i], err = decode(body)
		}
		if err != nil {
			return nil, fmt.Errorf("spool: read a record of %s at %d: %w", f.Name(), m.pos.off, err)
		}
	}
	return recs, nil
}

// commit forgets the sent records: it moves the cursor past them, deletes
// the segments left behind, and starts a fresh segment when nothing waits.
func (s *Spool) commit(batch []recMeta, recs []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.metas = s.metas[len(batch):]
	for i, m := range batch {
		s.jobs -= m.jobs
		s.bytes -= m.size
		for _, j := range recs[i].Jobs {
			k := idKey(m.queue, j.ID)
			if s.pending[k]--; s.pending[k] <= 0 {
				delete(s.pending, k)
			}
		}
	}
	s.down = false
	var cur position
	switch {
	case len(s.metas) > 0:
		cur = s.metas[0].pos
	case s.wSize > s.opts.SegmentBytes/2:
		if err := s.newSegment(s.segs[len(s.segs)-1] + 1); err != nil {
			return err
		}
		cur = position{seg: s.segs[len(s.segs)-1], off: int64(len(magic))}
	default:
		cur = position{seg: s.segs[len(s.segs)-1], off: s.wSize}
	}
	if err := writeCursor(s.dir, cur); err != nil {
		return err
	}
	for len(s.segs) > 0 && s.segs[0] < cur.seg {
		if err := os.Remove(filepath.Join(s.dir, segName(s.segs[0]))); err != nil {
			return fmt.Errorf("spool: remove a drained segment: %w", err)
		}
		s.segs = s.segs[1:]
	}
	return nil
}

// reject keeps a record the store refused for good in rejected.seg and
// logs it.
func (s *Spool) reject(r Record, cause error) error {
	frame, err := encode(r)
	if err != nil {
		return err
	}
	path := filepath.Join(s.dir, rejectedFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("spool: keep a rejected record: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
		frame = append([]byte(magic), frame...)
	}
	if _, err := f.Write(frame); err != nil {
		return fmt.Errorf("spool: keep a rejected record: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("spool: keep a rejected record: %w", err)
	}
	s.mu.Lock()
	s.rejected += len(r.Jobs)
	s.mu.Unlock()
	s.log.Error("spool: the store refused spooled jobs for good; kept in "+rejectedFile,
		"dir", s.dir, "queue", r.Queue, "jobs", len(r.Jobs), "spooled_at", r.At, "err", cause)
	return nil
}
