package queuehistory

import "time"

// SetEvery sets the period of Run's samples (a minute).
func (r *Recorder) SetEvery(d time.Duration) { r.every = d }
