package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly/internal/spool"
	"github.com/orderlyhq/orderly/persistence"
)

// Spool defaults.
const (
	// DefaultSpoolMaxBytes bounds what a spool holds unsent.
	DefaultSpoolMaxBytes = 256 << 20
	// DefaultSpoolRetry is the first wait after a drain failed; it doubles
	// after each failure in a row, up to DefaultSpoolRetryMax.
	DefaultSpoolRetry    = 250 * time.Millisecond
	DefaultSpoolRetryMax = 5 * time.Second
)

// Spool errors.
var (
	// ErrSpoolFull is wrapped by an Enqueue that could neither write to
	// the store nor keep the jobs in a spool already holding
	// SpoolConfig.MaxBytes: nothing of the call is kept.
	ErrSpoolFull = spool.ErrFull
	// ErrSpoolLocked is wrapped by New, Open or NewFromStore when another
	// process owns the spool directory.
	ErrSpoolLocked = spool.ErrLocked
)

// SpoolSync is when a spool forces what it keeps to disk (fsync).
type SpoolSync int

// The spool's fsync policies. A call that returned with its jobs spooled
// survives the producer's own crash in each of them; they differ for a
// crash of the machine.
const (
	// SpoolSyncEveryCall fsyncs before a spooling call returns (the
	// default): a spooled call survives a power loss.
	SpoolSyncEveryCall SpoolSync = iota
	// SpoolSyncInterval fsyncs every SpoolConfig.SyncEvery: a power loss
	// may lose the calls of the last interval.
	SpoolSyncInterval
	// SpoolSyncNever leaves it to the operating system.
	SpoolSyncNever
)

// SpoolConfig gives a client a local spool (docs/contract.md §6.7): when
// the store cannot take an enqueue (unreachable, failing, not replicated;
// not for bad input or an unknown queue), its jobs are appended to a file
// in Dir and the call succeeds as spooled (EnqueueResult.Spooled); a
// goroutine of the client sends them when the store is back, in the order
// they were spooled. The zero value of each field but Dir means its
// default.
type SpoolConfig struct {
	// Dir is the spool's directory (created if need be). One process owns
	// it at a time (flock, on Linux, macOS and the BSDs); another one gets
	// ErrSpoolLocked.
	Dir string
	// MaxBytes bounds what the spool holds unsent [DefaultSpoolMaxBytes];
	// a call that would pass it fails with ErrSpoolFull.
	MaxBytes int64
	// Sync is the fsync policy [SpoolSyncEveryCall]; SyncEvery is its
	// interval for SpoolSyncInterval [1s].
	Sync      SpoolSync
	SyncEvery time.Duration
	// RetryEvery is the first wait after a failed drain
	// [DefaultSpoolRetry]; it doubles up to RetryMax
	// [DefaultSpoolRetryMax].
	RetryEvery, RetryMax time.Duration
	// NoDedupKeys keeps jobs without a DedupKey without one. By default a
	// client with a spool gives each such job a key of its own
	// ("spool:<random>:<n>") before it first sends it, so that on a queue
	// with a dedup window a job sent again from the spool, after an
	// attempt whose outcome was unknown, is a duplicate and not stored
	// twice (docs/contract.md §3.12, §6.7).
	NoDedupKeys bool
	// Logger receives drain failures, torn records dropped at start and
	// jobs the store refused for good [slog.Default()].
	Logger *slog.Logger
}

// SpoolStats describe a client's spool.
type SpoolStats struct {
	// Jobs, Records and Bytes count what waits to be sent (a record is
	// one spooled call).
	Jobs, Records int
	Bytes         int64
	// Oldest is when the oldest waiting call was spooled (zero: none).
	Oldest time.Time
	// Rejected counts the spooled jobs the store refused for good when
	// they were sent (an unknown queue): they are kept in the
	// directory's rejected.seg and logged, not sent again.
	Rejected int
	// Down reports that the last attempt to send failed: until one
	// succeeds, every call is spooled without trying the store.
	Down bool
}

// spooler is a client's spool and its drain goroutine.
type spooler struct {
	sp      *spool.Spool
	cfg     SpoolConfig
	log     *slog.Logger
	keyBase string
	keySeq  atomic.Uint64
	kick    chan struct{} // wakes the drain (buffered, one)
	stop    chan struct{} // closed by close
	cancel  context.CancelFunc
	done    chan struct{} // closed when the drain returned
}

// openSpool opens cfg.Dir and starts the drain, which sends with send.
func openSpool(cfg SpoolConfig, send spool.Sender) (*spooler, error) {
	if cfg.Dir == "" {
		return nil, errors.New("client: a spool needs a directory (SpoolConfig.Dir)")
	}
	if cfg.RetryEvery <= 0 {
		cfg.RetryEvery = DefaultSpoolRetry
	}
	if cfg.RetryMax < cfg.RetryEvery {
		cfg.RetryMax = max(DefaultSpoolRetryMax, cfg.RetryEvery)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	sync := spool.SyncEveryCall
	switch cfg.Sync {
	case SpoolSyncEveryCall:
	case SpoolSyncInterval:
		sync = spool.SyncInterval
	case SpoolSyncNever:
		sync = spool.SyncNever
	default:
		return nil, fmt.Errorf("client: unknown SpoolConfig.Sync %d", cfg.Sync)
	}
	sp, err := spool.Open(cfg.Dir, spool.Options{MaxBytes: cfg.MaxBytes, Sync: sync, SyncEvery: cfg.SyncEvery, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	ctx, cancel := context.WithCancel(context.Background())
	s := &spooler{sp: sp, cfg: cfg, log: cfg.Logger, keyBase: "spool:" + hex.EncodeToString(rnd[:]) + ":",
		kick: make(chan struct{}, 1), stop: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	s.kick <- struct{}{} // send what an earlier run left
	go s.run(ctx, send)
	return s, nil
}

// run drains the spool whenever it holds something, waiting after a
// failure, until close.
func (s *spooler) run(ctx context.Context, send spool.Sender) {
	defer close(s.done)
	wait := s.cfg.RetryEvery
	failing := false // since the last drain that emptied the spool
	for {
		if s.sp.Stats().Jobs == 0 {
			select {
			case <-s.stop:
				return
			case <-s.kick:
			}
		}
		res, err := s.sp.Drain(ctx, send, permanent)
		if err == nil {
			if failing {
				s.log.Info("client: the store takes enqueues again; the spool is drained", "dir", s.sp.Dir(), "sent", res.Sent)
			}
			failing, wait = false, s.cfg.RetryEvery
			continue
		}
		if ctx.Err() != nil {
			return
		}
		level := slog.LevelDebug
		if !failing {
			level = slog.LevelWarn // once per outage; the retries are debug
		}
		s.log.Log(ctx, level, "client: the store does not take the spooled jobs yet; retrying", "dir", s.sp.Dir(),
			"waiting", s.sp.Stats().Jobs, "in", wait, "err", err)
		failing = true
		select {
		case <-s.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, s.cfg.RetryMax)
	}
}

// close stops the drain and closes the spool.
func (s *spooler) close() error {
	close(s.stop)
	s.cancel()
	<-s.done
	return s.sp.Close()
}

// permanent reports whether the store refused jobs for good: sending them
// again cannot succeed, so they are not spooled.
func permanent(err error) bool {
	return errors.Is(err, persistence.ErrInvalid) || errors.Is(err, persistence.ErrUnknownQueue)
}

// writeSpooled is write's end with a spool: a held call (an id of it
// waits in the spool, or the store is down) is spooled without trying the
// store; any other is sent, and spooled if the store cannot take it.
func (c *Client) writeSpooled(ctx context.Context, queue string, out []persistence.NewJob, now time.Time) (EnqueueResult, error) {
	s := c.spool
	if !s.cfg.NoDedupKeys {
		for i := range out {
			if out[i].DedupKey == "" {
				out[i].DedupKey = s.keyBase + strconv.FormatUint(s.keySeq.Add(1), 36)
			}
		}
	}
	if err := persistence.ValidateQueueName(queue); err != nil {
		return EnqueueResult{}, err
	}
	maxPayload := c.cfg.MaxPayloadBytes
	if maxPayload <= 0 {
		maxPayload = persistence.DefaultMaxPayloadBytes
	}
	if err := persistence.ValidateJobs(out, maxPayload); err != nil {
		return EnqueueResult{}, err
	}
	held, err := s.sp.AppendIfHeld(queue, out, now)
	if err != nil {
		return EnqueueResult{}, fmt.Errorf("spool %d jobs: %w", len(out), err)
	}
	if held {
		s.wake()
		return EnqueueResult{Spooled: len(out)}, nil
	}
	res, err := persistence.EnqueueReport(ctx, c.store, queue, out)
	if err == nil || permanent(err) {
		return res, err
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return res, err // the caller gave up
	}
	if serr := s.sp.Append(queue, out, now); serr != nil {
		return EnqueueResult{}, fmt.Errorf("%w; the spool could not keep the jobs either: %w", err, serr)
	}
	s.wake()
	return EnqueueResult{Spooled: len(out)}, nil
}

func (s *spooler) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Spooled reports what the client's spool holds; the zero value for a
// client without one.
func (c *Client) Spooled() SpoolStats {
	if c.spool == nil {
		return SpoolStats{}
	}
	st := c.spool.sp.Stats()
	return SpoolStats{Jobs: st.Jobs, Records: st.Records, Bytes: st.Bytes, Oldest: st.Oldest, Rejected: st.Rejected, Down: st.Down}
}

// DrainSpool sends what the spool holds now, in order, and returns nil
// once nothing waits (jobs the store refused for good are set aside, see
// SpoolStats.Rejected), or the error that stopped it (the store is still
// away). The client's own drain does the same in the background; call
// DrainSpool to wait for it, e.g. before Close. A client without a spool
// returns nil.
func (c *Client) DrainSpool(ctx context.Context) error {
	if c.spool == nil {
		return nil
	}
	if _, err := c.spool.sp.Drain(ctx, c.sendSpooled, permanent); err != nil {
		return fmt.Errorf("client: drain the spool: %w", err)
	}
	return nil
}

// sendSpooled sends spooled jobs to the store, within the client's
// timeout.
func (c *Client) sendSpooled(ctx context.Context, queue string, jobs []persistence.NewJob) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	_, err := persistence.EnqueueReport(ctx, c.store, queue, jobs)
	return err
}
