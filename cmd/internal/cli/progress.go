package cli

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progressEvery is the least time between two redraws of the progress bar.
const progressEvery = 100 * time.Millisecond

// barWidth is the width of the bar itself, in characters.
const barWidth = 30

// progress draws a one-line progress report on a terminal, redrawn in
// place:
//
//	[=============                 ]  45%  45000 jobs  10288 jobs/s
//
// or, when the input's size is unknown (a pipe), "45000 jobs  10288
// jobs/s". A nil *progress draws nothing, so callers need not check.
type progress struct {
	w     io.Writer
	now   func() time.Time
	start time.Time
	// total is the input's size in bytes, 0 when unknown.
	total int64
	last  time.Time
	drawn bool
}

// update redraws the report for jobs enqueued and done bytes of input
// consumed, at most every progressEvery.
func (p *progress) update(jobs int, done int64) {
	if p == nil {
		return
	}
	now := p.now()
	if p.drawn && now.Sub(p.last) < progressEvery {
		return
	}
	p.last, p.drawn = now, true
	speed := rate(jobs, now.Sub(p.start))
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%d jobs  %d jobs/s\x1b[K", jobs, speed)
		return
	}
	pct := min(int(done*100/p.total), 100)
	n := pct * barWidth / 100
	fmt.Fprintf(p.w, "\r[%s%s] %3d%%  %d jobs  %d jobs/s\x1b[K", strings.Repeat("=", n), strings.Repeat(" ", barWidth-n), pct, jobs, speed)
}

// clear erases the report, if one was drawn.
func (p *progress) clear() {
	if p != nil && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}
