// Package queuehistory keeps a per-minute history of every queue's metrics in
// Redis, for the dashboard's charts and GET /api/v1/queues/{q}/history: a
// day and more of processed, failed, queued, morgue, busy and lag, which
// every node reads and which survives restarts.
//
// Once a minute, just after the minute turns, each node's Recorder reads
// the metrics of every queue (Store.Stats) and appends them to one Redis
// list per queue, P:{q}:hist, in one pipelined round trip of one script
// call per queue. The script takes the minute from Redis's clock and
// appends only when the list has no sample of that minute or a later one,
// so a cluster of any size keeps one sample a minute. The list keeps the
// last Keep samples (a day and an hour) and expires Retention after its
// last write, so a queue no node records any more leaves nothing behind.
// A sample is about 40 bytes: some 60 KB a queue.
//
// Processed and failed are the store's counters since the queue was
// created; Read turns them into counts per minute.
package queuehistory

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// Bounds of the history.
const (
	// MaxMinutes is the most minutes Read answers: a day.
	MaxMinutes = 1440
	// Keep is how many samples a queue's list keeps: a day and an hour,
	// so that a day of counts per minute can be computed.
	Keep = MaxMinutes + 60
	// Retention is how long a queue's list lives after its last sample.
	Retention = 25 * time.Hour
)

// record appends a sample to a queue's list (record.lua).
//
//go:embed record.lua
var recordLua string

var record = redis.NewScript(recordLua)

// Recorder writes and reads the history. It is safe for concurrent use.
type Recorder struct {
	rdb    redis.UniversalClient
	prefix string
	log    *slog.Logger
	now    func() time.Time
	// every is the period of Run's samples, a minute.
	every time.Duration
}

// Config configures a Recorder; its zero fields mean their defaults.
type Config struct {
	// Prefix is the store's key prefix (redisstore.Config.Prefix).
	Prefix string
	// Logger receives Run's failures. [slog.Default()]
	Logger *slog.Logger
	// Now is the clock Read counts the minutes asked for from. [time.Now]
	Now func() time.Time
}

// New returns a Recorder on rdb, the store's Redis client.
func New(rdb redis.UniversalClient, cfg Config) *Recorder {
	r := &Recorder{rdb: rdb, prefix: cfg.Prefix, log: cfg.Logger, now: cfg.Now, every: time.Minute}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r
}

// key is a queue's history list, in the queue's own Redis Cluster slot.
func (r *Recorder) key(queue string) string { return r.prefix + ":{" + queue + "}:hist" }

// Record appends the queues' metrics as the sample of the current minute
// of Redis's clock, for each queue that has none yet.
func (r *Recorder) Record(ctx context.Context, stats []persistence.QueueStats) error {
	return r.record(ctx, "", stats)
}

// RecordAt is Record for the minute of at rather than Redis's: to import a
// history, or to build one in a test.
func (r *Recorder) RecordAt(ctx context.Context, at time.Time, stats []persistence.QueueStats) error {
	return r.record(ctx, strconv.FormatInt(at.Unix()/60, 10), stats)
}

func (r *Recorder) record(ctx context.Context, minute string, stats []persistence.QueueStats) error {
	if len(stats) == 0 {
		return nil
	}
	ttl := strconv.FormatInt(Retention.Milliseconds(), 10)
	var err error
	for range 2 {
		pipe := r.rdb.Pipeline()
		for _, st := range stats {
			record.EvalSha(ctx, pipe, []string{r.key(st.Name)}, minute, encode(st), Keep, ttl)
		}
		_, err = pipe.Exec(ctx)
		if err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
			break
		}
		// Redis does not know the script yet (or lost it in a restart):
		// load it, and send the samples again; those appended already
		// are not appended twice.
		if err = record.Load(ctx, r.rdb).Err(); err != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("history: record: %w", err)
	}
	return nil
}

// encode is a sample's values after its minute: processed, failed, length,
// morgue length, busy and lag, separated by spaces.
func encode(st persistence.QueueStats) string {
	return fmt.Sprintf("%d %d %d %d %d %s", st.Processed, st.Failed, st.Length, st.MorgueLength, st.Busy,
		strconv.FormatFloat(st.Lag, 'f', 3, 64))
}

// sample is one stored sample.
type sample struct {
	minute                                     int64
	processed, failed, length, morgueLen, busy int64
	lag                                        float64
}

func decode(s string) (sample, error) {
	f := strings.Fields(s)
	if len(f) != 7 {
		return sample{}, fmt.Errorf("history: malformed sample %q", s)
	}
	var v sample
	var err error
	ints := []*int64{&v.minute, &v.processed, &v.failed, &v.length, &v.morgueLen, &v.busy}
	for i, p := range ints {
		if *p, err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return sample{}, fmt.Errorf("history: malformed sample %q", s)
		}
	}
	if v.lag, err = strconv.ParseFloat(f[6], 64); err != nil {
		return sample{}, fmt.Errorf("history: malformed sample %q", s)
	}
	return v, nil
}

// Read returns the samples of each named queue taken in the last minutes
// minutes (1 to MaxMinutes), oldest first, in one pipelined round trip, in
// the HTTP API's shape: a minute's Processed and Failed count the ids
// settled in the minute before it, nil when the history has no sample of
// that minute to count from. A queue without history has none.
func (r *Recorder) Read(ctx context.Context, queues []string, minutes int) (map[string][]apiv1.Minute, error) {
	if minutes < 1 || minutes > MaxMinutes {
		return nil, fmt.Errorf("history: minutes must be between 1 and %d, got %d", MaxMinutes, minutes)
	}
	pipe := r.rdb.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(queues))
	for i, q := range queues {
		// One more sample than asked for: the first point's counts.
		cmds[i] = pipe.LRange(ctx, r.key(q), 0, int64(minutes))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("history: read: %w", err)
	}
	since := r.now().Unix()/60 - int64(minutes) + 1
	out := make(map[string][]apiv1.Minute, len(queues))
	for i, q := range queues {
		pts, err := points(cmds[i].Val(), since)
		if err != nil {
			return nil, err
		}
		out[q] = pts
	}
	return out, nil
}

// points turns a list's samples, newest first, into the points from the
// minute since on, oldest first.
func points(raw []string, since int64) ([]apiv1.Minute, error) {
	samples := make([]sample, 0, len(raw))
	for i := len(raw) - 1; i >= 0; i-- {
		s, err := decode(raw[i])
		if err != nil {
			return nil, err
		}
		samples = append(samples, s)
	}
	pts := []apiv1.Minute{}
	for i, s := range samples {
		if s.minute < since {
			continue
		}
		p := apiv1.Minute{T: float64(s.minute * 60), Length: s.length, MorgueLength: s.morgueLen, Busy: s.busy, Lag: s.lag}
		if i > 0 && samples[i-1].minute == s.minute-1 {
			prev := samples[i-1]
			// A counter that went down (the queue was created again)
			// counts from zero.
			processed, failed := since0(s.processed, prev.processed), since0(s.failed, prev.failed)
			p.Processed, p.Failed = &processed, &failed
		}
		pts = append(pts, p)
	}
	return pts, nil
}

func since0(now, before int64) int64 {
	if now < before {
		return now
	}
	return now - before
}

// Run records a sample of every queue stats reports just after each turn
// of the minute, until ctx ends. A failure is logged, once until the
// recording works again.
func (r *Recorder) Run(ctx context.Context, stats func(context.Context) ([]persistence.QueueStats, error)) {
	failing := false
	timer := time.NewTimer(r.untilNext())
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		st, err := stats(ctx)
		if err == nil {
			err = r.Record(ctx, st)
		}
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			r.log.Warn("history: cannot record the queues' metrics of this minute; the charts will miss it", "err", err)
		case err == nil && failing:
			failing = false
			r.log.Info("history: recording the queues' metrics again")
		}
		timer.Reset(r.untilNext())
	}
}

// untilNext is the time until a second after the next turn of the minute
// (of every, in tests): the samples of all nodes are taken then, and the
// first to reach Redis is kept.
func (r *Recorder) untilNext() time.Duration {
	now := r.now()
	return now.Truncate(r.every).Add(r.every + r.every/60).Sub(now)
}

// StoreStats returns a function that reads the metrics of every queue
// registered in store, for Run.
func StoreStats(store persistence.QueueStore) func(context.Context) ([]persistence.QueueStats, error) {
	return func(ctx context.Context) ([]persistence.QueueStats, error) {
		specs, err := store.Queues(ctx)
		if err != nil || len(specs) == 0 {
			return nil, err
		}
		names := make([]string, len(specs))
		for i, q := range specs {
			names[i] = q.Name
		}
		return store.Stats(ctx, names...)
	}
}
