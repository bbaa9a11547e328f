// Package client enqueues jobs into Orderly's queues without running a node:
// producers (web apps, scripts) use it to write to Redis directly.
//
//	c, err := client.New(rdb, nil)
//	err = c.Enqueue(ctx, "orders", client.Job{ID: "order-42", Payload: []byte(`{"state":"paid"}`)})
//
// An Enqueue that returns nil is in Redis. Jobs of one call are validated
// together: one bad job rejects the call and nothing is written. A queue
// must exist (a node serving it registers it, with its shard count).
//
// With Config.Spool, a client keeps the jobs the store cannot take in a
// local file and sends them when it can, in order per id
// (docs/contract.md §6.7); such a call succeeds as spooled.
package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
)

// DefaultTimeout bounds an Enqueue whose context has no deadline.
const DefaultTimeout = 10 * time.Second

// Config configures a Client. The zero value of each field means its default.
type Config struct {
	// Prefix is the Redis key prefix [redisstore.DefaultPrefix]; it must be
	// the nodes' prefix.
	Prefix string
	// MaxPayloadBytes limits one payload [persistence.DefaultMaxPayloadBytes].
	MaxPayloadBytes int
	// Timeout bounds an Enqueue whose context has no deadline
	// [DefaultTimeout].
	Timeout time.Duration
	// Middleware wraps every Enqueue; the first is the outermost.
	Middleware []Middleware
	// Now is the clock for PerformIn [time.Now].
	Now func() time.Time
	// Spool, when set, keeps the jobs of an Enqueue that the store cannot
	// take in a local file and sends them later (docs/contract.md §6.7).
	Spool *SpoolConfig
}

// Job is one job to enqueue.
type Job struct {
	// ID names the job. Jobs of one id are processed one at a time, in
	// score order, and merge while they wait.
	ID string
	// Payload is stored as opaque bytes.
	Payload []byte
	// Score orders the id's payloads; nil means now (unix seconds). Use
	// Score(v) to set one.
	Score *float64
	// PerformAt delays the job until then (between 1970 and
	// persistence.MaxTimeSeconds); PerformIn delays it by a duration (not
	// negative). At most one of them; neither means now.
	PerformAt time.Time
	PerformIn time.Duration
	// Headers are string metadata carried with the payload (at most 32
	// entries and 8 KiB); see docs/contract.md §10.
	Headers map[string]string
	// DedupKey, on a queue with a dedup window (orderly.Worker.DedupWindow,
	// dedup_window), makes the job a duplicate, acknowledged and not
	// stored, when a job of the same id with the same key was enqueued
	// within the window, also if that one was processed since
	// (docs/contract.md §3.12). At most 512 bytes; empty means none; a
	// queue without a window ignores it. EnqueueReport counts duplicates.
	DedupKey string
	// ExpiresAt or ExpiresIn (from Config.Now, not negative), at most one,
	// make the payload expire: not handed to a handler by then, it is
	// discarded when fetched, counted (Stats' Expired) and never delivered
	// (docs/contract.md §3.15). Neither means it never expires.
	ExpiresAt time.Time
	ExpiresIn time.Duration
	// Priority orders the due ids of a shard: 1 (first) to 4; 0 means 1.
	// An id takes the most urgent priority of its queued payloads, which
	// stay in score order (docs/contract.md §3.16). Use it once every node
	// runs a release that knows priorities.
	Priority int
}

// EnqueueResult is what EnqueueReport reports: Duplicates counts the jobs
// acknowledged as duplicates and not stored, Spooled the jobs kept in the
// client's spool (Config.Spool) because the store could not take them.
type EnqueueResult = persistence.EnqueueResult

// Score returns a pointer to v, for Job.Score.
func Score(v float64) *float64 { return &v }

// EnqueueFunc enqueues jobs into a queue.
type EnqueueFunc func(ctx context.Context, queue string, jobs []Job) error

// Middleware wraps Enqueue (client middleware), e.g. to add tracing or to
// stamp payloads.
type Middleware func(next EnqueueFunc) EnqueueFunc

// Client enqueues jobs. It is safe for concurrent use.
type Client struct {
	store   persistence.Store
	cfg     Config
	enqueue EnqueueFunc
	owned   redis.UniversalClient // the Redis client Open made, closed by Close
	spool   *spooler              // nil without Config.Spool
}

// Open returns a client that writes to the Redis named by redisURL, in any
// form of docs/contract.md §4: redis://, rediss://, unix://,
// redis+cluster://host:port,host:port, redis+sentinel://host:port/master
// and their TLS forms (see package redisurl). Close closes its connections.
func Open(redisURL string, cfg *Config) (*Client, error) {
	rdb, err := redisurl.Open(redisURL)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c, err := New(rdb, cfg)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	c.owned = rdb
	return c, nil
}

// Close stops the spool's drain and gives its directory up (what is still
// spooled stays in it, for the next client that opens it; call DrainSpool
// first to send it), then closes the Redis connections of a client made by
// Open; for a client made by New or NewFromStore the caller owns the Redis
// client.
func (c *Client) Close() error {
	var err error
	if c.spool != nil {
		err = c.spool.close()
	}
	if c.owned != nil {
		if cerr := c.owned.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// New returns a client that writes to Redis through rdb.
func New(rdb redis.UniversalClient, cfg *Config) (*Client, error) {
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	store, err := redisstore.New(rdb, &redisstore.Config{Prefix: c.Prefix, MaxPayloadBytes: c.MaxPayloadBytes})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return NewFromStore(store, cfg)
}

// NewFromStore returns a client that writes to store.
func NewFromStore(store persistence.Store, cfg *Config) (*Client, error) {
	if store == nil {
		return nil, errors.New("client: a store is required")
	}
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	cl := &Client{store: store, cfg: c}
	if c.Spool != nil {
		sp, err := openSpool(*c.Spool, cl.sendSpooled)
		if err != nil {
			return nil, err
		}
		cl.spool = sp
	}
	cl.enqueue = cl.write
	for i := len(c.Middleware) - 1; i >= 0; i-- {
		cl.enqueue = c.Middleware[i](cl.enqueue)
	}
	return cl, nil
}

// Enqueue adds jobs to the queue. It returns once they are in Redis (or,
// with Config.Spool, in the spool: EnqueueReport tells which), or an
// error: a *persistence.FieldError (errors.Is persistence.ErrInvalid) naming
// the first bad job, persistence.ErrUnknownQueue, or a store error (with a
// spool: one the spool could not keep either, e.g. ErrSpoolFull).
func (c *Client) Enqueue(ctx context.Context, queue string, jobs ...Job) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	return c.enqueue(ctx, queue, jobs)
}

// reportKey is the context key of an EnqueueReport's result, which the
// write at the end of the middleware chain fills.
type reportKey struct{}

// EnqueueReport is Enqueue, also reporting how many of the jobs were
// duplicates under the queue's dedup window (Job.DedupKey), acknowledged
// and not stored. The jobs go through the middleware as with Enqueue; a
// middleware that does not pass its context on to the next hides the
// count (it reports 0).
func (c *Client) EnqueueReport(ctx context.Context, queue string, jobs ...Job) (EnqueueResult, error) {
	res := &EnqueueResult{}
	err := c.Enqueue(context.WithValue(ctx, reportKey{}, res), queue, jobs...)
	return *res, err
}

func (c *Client) write(ctx context.Context, queue string, jobs []Job) error {
	now := c.cfg.Now()
	out := make([]persistence.NewJob, len(jobs))
	for i, j := range jobs {
		// The due time follows the rule of every transport, in float
		// seconds as the store keeps times.
		var at, in *float64
		if !j.PerformAt.IsZero() {
			v := persistence.UnixSeconds(j.PerformAt)
			at = &v
		}
		if j.PerformIn != 0 {
			v := j.PerformIn.Seconds()
			in = &v
		}
		due, err := persistence.PerformAt(at, in, now, i)
		if err != nil {
			return err
		}
		exp, err := expiresAt(j, now, i)
		if err != nil {
			return err
		}
		out[i] = persistence.NewJob{ID: j.ID, Payload: j.Payload, Score: j.Score, PerformAt: due, Headers: j.Headers, DedupKey: j.DedupKey,
			ExpiresAt: exp, Priority: j.Priority}
	}
	var res EnqueueResult
	var err error
	if c.spool != nil {
		res, err = c.writeSpooled(ctx, queue, out, now)
	} else {
		res, err = persistence.EnqueueReport(ctx, c.store, queue, out)
	}
	if rep, ok := ctx.Value(reportKey{}).(*EnqueueResult); ok {
		*rep = res
	}
	if err != nil {
		if errors.Is(err, persistence.ErrInvalid) || errors.Is(err, persistence.ErrUnknownQueue) {
			return err
		}
		return fmt.Errorf("client: enqueue to %s: %w", queue, err)
	}
	return nil
}

// PerformNow makes the queued job id of queue due now, keeping its retry
// count and error (docs/contract.md §3.9). It returns an error wrapping
// persistence.ErrNotFound when nothing of the id is queued; a call in
// flight for the id is not touched.
func (c *Client) PerformNow(ctx context.Context, queue, id string) error {
	return c.jobAction(ctx, queue, id, "perform now", c.store.PerformJobNow)
}

// Kill moves every queued payload of job id of queue to the morgue, with
// the job's last error (docs/contract.md §3.9). It returns an error
// wrapping persistence.ErrNotFound when nothing of the id is queued; a
// call in flight for the id is not touched.
func (c *Client) Kill(ctx context.Context, queue, id string) error {
	return c.jobAction(ctx, queue, id, "kill", c.store.KillJob)
}

func (c *Client) jobAction(ctx context.Context, queue, id, what string, run func(context.Context, string, string) (bool, error)) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	ok, err := run(ctx, queue, id)
	if err != nil {
		if errors.Is(err, persistence.ErrInvalid) || errors.Is(err, persistence.ErrUnknownQueue) {
			return err
		}
		return fmt.Errorf("client: %s %s/%s: %w", what, queue, id, err)
	}
	if !ok {
		return fmt.Errorf("client: %s %s/%s: %w: nothing of the id is queued", what, queue, id, persistence.ErrNotFound)
	}
	return nil
}

// PauseQueue pauses the queue cluster-wide (docs/contract.md §9): it keeps
// accepting enqueues, and no node starts a new handler call of it until
// ResumeQueue; running calls finish. Nodes see the change within
// orderly.ControlPoll. persistence.ErrUnknownQueue for a queue no node or
// client registered.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	return c.setPaused(ctx, queue, true)
}

// ResumeQueue undoes PauseQueue.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	return c.setPaused(ctx, queue, false)
}

// QueuePaused reports whether the queue is paused, as the store holds it.
func (c *Client) QueuePaused(ctx context.Context, queue string) (bool, error) {
	ctl, err := c.store.Controls(ctx, queue)
	if err != nil {
		return false, fmt.Errorf("client: read the controls of %s: %w", queue, err)
	}
	return ctl[0].Paused, nil
}

func (c *Client) setPaused(ctx context.Context, queue string, paused bool) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	if err := c.store.SetPaused(ctx, queue, paused); err != nil {
		return fmt.Errorf("client: set paused of %s: %w", queue, err)
	}
	return nil
}

// expiresAt is j's expiry by persistence.ExpiresAt, the rule of every
// transport (the zero time: none).
func expiresAt(j Job, now time.Time, index int) (time.Time, error) {
	var at, in *float64
	if !j.ExpiresAt.IsZero() {
		v := persistence.UnixSeconds(j.ExpiresAt)
		at = &v
	}
	if j.ExpiresIn != 0 {
		v := j.ExpiresIn.Seconds()
		in = &v
	}
	return persistence.ExpiresAt(at, in, now, index)
}
