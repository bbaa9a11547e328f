package spool

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// scanned is what a scan of a spool directory found.
type scanned struct {
	segs     []uint64
	cur      position // the cursor read (zero when none)
	metas    []recMeta
	pending  map[string]int
	rejected int
}

// scan reads a spool directory. With repair (the owner's open) it deletes
// segments the cursor left behind and truncates a torn tail; without it
// (Inspect) it changes nothing.
func scan(dir string, repair bool, log *slog.Logger) (*scanned, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("spool: read %s: %w", dir, err)
	}
	st := &scanned{pending: map[string]int{}}
	for _, e := range entries {
		name := e.Name()
		if digits, ok := strings.CutSuffix(name, ".seg"); ok && len(digits) == 20 {
			if seq, err := strconv.ParseUint(digits, 10, 64); err == nil {
				st.segs = append(st.segs, seq)
			}
		}
	}
	slices.Sort(st.segs)
	cur, ok := readCursor(dir, log)
	if ok {
		st.cur = cur
	}
	if !ok && len(st.segs) > 0 {
		cur = position{seg: st.segs[0], off: int64(len(magic))}
	}
	live := st.segs[:0]
	for _, seq := range st.segs {
		if seq < cur.seg {
			if repair {
				if err := os.Remove(filepath.Join(dir, segName(seq))); err != nil {
					return nil, fmt.Errorf("spool: remove a drained segment: %w", err)
				}
			}
			continue
		}
		live = append(live, seq)
	}
	st.segs = live
	for i, seq := range st.segs {
		start := int64(len(magic))
		if seq == cur.seg {
			start = cur.off
		}
		if err := st.segment(dir, seq, start, i == len(st.segs)-1, repair, log); err != nil {
			return nil, err
		}
	}
	st.rejected = countRejected(dir)
	return st, nil
}

// segment scans one segment from start, noting its records. A bad record
// at the end of the last segment is a write cut short by a crash (a
// warning); anywhere else the file was damaged (an error).
func (st *scanned) segment(dir string, seq uint64, start int64, last, repair bool, log *slog.Logger) error {
	path := filepath.Join(dir, segName(seq))
	flag := os.O_RDONLY
	if repair {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return fmt.Errorf("spool: open segment: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("spool: open segment: %w", err)
	}
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(f, head); err != nil {
		// A segment cut short while it was created holds nothing.
		log.Warn("spool: a segment without its header holds nothing; rewriting it", "path", path, "bytes", fi.Size())
		if repair {
			if err := f.Truncate(0); err != nil {
				return fmt.Errorf("spool: repair %s: %w", path, err)
			}
			if _, err := f.WriteAt([]byte(magic), 0); err != nil {
				return fmt.Errorf("spool: repair %s: %w", path, err)
			}
		}
		return nil
	}
	if string(head) != magic {
		return fmt.Errorf("spool: %s is not a spool segment (unknown header)", path)
	}
	if start > fi.Size() {
		log.Warn("spool: cursor past the end of its segment; reading the segment from its start", "path", path)
		start = int64(len(magic))
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("spool: read %s: %w", path, err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	off := start
	for {
		body, err := readFrame(r, fi.Size()-off)
		var rec Record
		if err == nil {
			rec, err = decode(body)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			level, what := slog.LevelError, "spool: dropping a corrupt record and what follows it in its segment (the file was damaged)"
			if last && isTail(f, off, fi.Size()) {
				level, what = slog.LevelWarn, "spool: dropping a torn last record (a write cut short by a crash)"
			}
			log.Log(context.Background(), level, what, "path", path, "offset", off, "bytes_dropped", fi.Size()-off)
			if repair {
				if err := f.Truncate(off); err != nil {
					return fmt.Errorf("spool: truncate %s: %w", path, err)
				}
				_ = f.Sync()
			}
			return nil
		}
		size := int64(frameHeader + len(body))
		st.metas = append(st.metas, recMeta{queue: rec.Queue, at: rec.At, pos: position{seg: seq, off: off}, size: size, jobs: len(rec.Jobs)})
		for _, j := range rec.Jobs {
			st.pending[idKey(rec.Queue, j.ID)]++
		}
		off += size
	}
}

// countRejected counts the jobs of rejected.seg.
func countRejected(dir string) int {
	f, err := os.Open(filepath.Join(dir, rejectedFile))
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	r := bufio.NewReader(f)
	if _, err := r.Discard(len(magic)); err != nil {
		return 0
	}
	n, left := 0, fi.Size()-int64(len(magic))
	for {
		body, err := readFrame(r, left)
		if err != nil {
			return n
		}
		left -= int64(frameHeader + len(body))
		if rec, err := decode(body); err == nil {
			n += len(rec.Jobs)
		}
	}
}

// Inspect reports what the spool in dir holds without taking its lock or
// changing anything (a torn tail is left for the owner's open to drop).
func Inspect(dir string, log *slog.Logger) (Stats, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := scan(dir, false, log)
	if err != nil {
		return Stats{}, err
	}
	out := Stats{Records: len(st.metas), Rejected: st.rejected}
	for _, m := range st.metas {
		out.Jobs += m.jobs
		out.Bytes += m.size
	}
	if len(st.metas) > 0 {
		out.Oldest = st.metas[0].at
	}
	return out, nil
}

// isTail reports whether the frame at off claims to reach at least to the
// end of the file (size): a frame cut short, not a damaged one followed by
// others.
func isTail(f *os.File, off, size int64) bool {
	var h [frameHeader]byte
	if _, err := f.ReadAt(h[:], off); err != nil {
		return true
	}
	return off+frameHeader+int64(binary.BigEndian.Uint32(h[:])) >= size
}
