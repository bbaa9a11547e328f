// Command order-pipeline runs an order's lifecycle on a stateful queue
// (docs/contract.md §11): the events created, paid and shipped of each order
// are payloads of the orders queue, and its handler keeps one state per
// order id, committed with the acknowledgement. An order that is created
// sets a timer; one still unpaid when the timer fires is cancelled. Each
// payment, shipment and cancellation emits a job to the notifications
// queue, committed with the same acknowledgement. It prints each order's
// final state and the notifications sent.
//
//	go run ./examples/order-pipeline                          # an in-memory Redis
//	go run ./examples/order-pipeline --redis redis://127.0.0.1:6379/0
//
// The same handler as a webhook receiver in Python is receiver.py, run by
// the orderly binary with orderly.yaml (README.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Queue is the orders queue.
const Queue = "orders"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "order-pipeline:", err)
		os.Exit(1)
	}
}

// run starts a node serving the orders queue, sends the events of four
// orders, waits for them to settle, and prints the final states on out
// (logs on logs).
func run(ctx context.Context, args []string, out, logs io.Writer) error {
	opts, err := parseFlags(args, logs)
	if err != nil {
		return err
	}
	rdb, closeRedis, err := openRedis(opts.redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()
	store, err := redisstore.New(rdb, nil)
	if err != nil {
		return err
	}
	sent := &notifier{}
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: opts.logger,
		Workers: []orderly.Worker{{
			Queue: Queue, Shards: 2, BatchSize: 10, State: true,
			Handler: Handler(opts.unpaidAfter, opts.logger),
		}, {
			// The notifications the orders handler emits; a real one
			// would send an email.
			Queue: NotificationsQueue, Shards: 2, BatchSize: 10,
			Handler: sent.handle,
		}},
	})
	if err != nil {
		return err
	}
	if err := node.Start(ctx); err != nil {
		return err
	}
	defer node.Stop(context.Background())
	c, err := client.New(rdb, nil)
	if err != nil {
		return err
	}

	ids, err := sendOrders(ctx, c)
	if err != nil {
		return err
	}
	final, err := settle(ctx, c, ids, opts.unpaidAfter, sent)
	if err != nil {
		return err
	}
	for _, id := range ids {
		io.WriteString(out, formatOrder(id, final[id]))
	}
	for _, n := range sent.sorted() {
		fmt.Fprintf(out, "notified %s: %s\n", n.Order, n.Status)
	}
	return nil
}

// options are the command's flags.
type options struct {
	redisURL    string
	unpaidAfter time.Duration
	logger      *slog.Logger
}

// parseFlags reads the flags; the logger writes to logs, at Info with -v
// and at Warn without.
func parseFlags(args []string, logs io.Writer) (options, error) {
	fs := flag.NewFlagSet("order-pipeline", flag.ContinueOnError)
	fs.SetOutput(logs)
	redisURL := fs.String("redis", "", "Redis URL; empty runs an in-memory Redis (miniredis) in this process")
	unpaidAfter := fs.Duration("unpaid-after", 2*time.Second, "how long a created order may stay unpaid before it is cancelled")
	verbose := fs.Bool("v", false, "log the node and each handler call")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	return options{redisURL: *redisURL, unpaidAfter: *unpaidAfter, logger: logger}, nil
}

// openRedis connects to the Redis at url, or to an in-memory Redis
// (miniredis) started in this process when url is empty, and returns a
// function that closes both.
func openRedis(url string) (*redis.Client, func(), error) {
	if url != "" {
		opts, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, fmt.Errorf("--redis: %w", err)
		}
		rdb := redis.NewClient(opts)
		return rdb, func() { rdb.Close() }, nil
	}
	mr, err := miniredis.Run()
	if err != nil {
		return nil, nil, fmt.Errorf("in-memory redis: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { rdb.Close(); mr.Close() }, nil
}

// sendOrders enqueues the events of four orders, each order's with scores
// in the order they happened, and returns the orders' ids, sorted.
func sendOrders(ctx context.Context, c *client.Client) ([]string, error) {
	orders := map[string][]Event{
		"order-1": {{Event: "created", Total: 42.5}, {Event: "paid"}, {Event: "shipped"}},
		"order-2": {{Event: "created", Total: 9.9}},
		"order-3": {{Event: "created", Total: 120}, {Event: "paid"}},
		"order-4": {{Event: "created", Total: 15}},
	}
	ids := slices.Sorted(maps.Keys(orders))
	var jobs []client.Job
	for _, id := range ids {
		for i, e := range orders[id] {
			data, _ := json.Marshal(e) // a string and a number always marshal
			jobs = append(jobs, client.Job{ID: id, Payload: data, Score: client.Score(float64(i + 1))})
		}
	}
	return ids, c.Enqueue(ctx, Queue, jobs...)
}

// settle waits until no order is left unpaid (order-2 and order-4 are
// cancelled by their timers, set to fire after unpaidAfter), sends a late
// payment for order-4, then waits until it is recorded and every change to
// paid, shipped or cancelled was notified. It returns the final states.
func settle(ctx context.Context, c *client.Client, ids []string, unpaidAfter time.Duration, sent *notifier) (map[string]Order, error) {
	if _, err := waitStates(ctx, c, ids, 10*unpaidAfter+10*time.Second, func(m map[string]Order) bool {
		for _, o := range m {
			if o.Status == "" || o.Status == "created" {
				return false
			}
		}
		return true
	}); err != nil {
		return nil, err
	}
	// A payment that comes after the order was cancelled changes nothing
	// but its history.
	late, _ := json.Marshal(Event{Event: "paid"})
	if err := c.Enqueue(ctx, Queue, client.Job{ID: "order-4", Payload: late, Score: client.Score(2)}); err != nil {
		return nil, err
	}
	return waitStates(ctx, c, ids, 10*time.Second, func(m map[string]Order) bool {
		if len(m["order-4"].Events) != 3 {
			return false
		}
		want := 0
		for _, o := range m {
			for _, e := range o.Events {
				if e == "paid" || e == "shipped" || strings.HasPrefix(e, "cancelled") {
					want++
				}
			}
		}
		return sent.len() >= want
	})
}

// notifier stands for a notification service: it keeps what the
// notifications queue handed it.
type notifier struct {
	mu   sync.Mutex // guards sent
	sent []Notification
}

func (s *notifier) handle(ctx context.Context, b *orderly.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range b.Jobs {
		for _, p := range j.Payloads { // in the order the events happened
			var n Notification
			if err := json.Unmarshal(p.Data, &n); err != nil {
				return fmt.Errorf("notification for %s: %w", j.ID, err)
			}
			s.sent = append(s.sent, n)
		}
	}
	return nil
}

func (s *notifier) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

// sorted returns the notifications by order, each order's in the order
// they were sent.
func (s *notifier) sorted() []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.sent)
	slices.SortStableFunc(out, func(a, b Notification) int { return strings.Compare(a.Order, b.Order) })
	return out
}

// formatOrder is the line printed for an order's final state.
func formatOrder(id string, o Order) string {
	return fmt.Sprintf("%s  %-9s  %6.2f  %s\n", id, o.Status, o.Total, strings.Join(o.Events, " -> "))
}

// waitStates polls the orders' states until done accepts them, and returns
// them.
func waitStates(ctx context.Context, c *client.Client, ids []string, timeout time.Duration, done func(map[string]Order) bool) (map[string]Order, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		m := map[string]Order{}
		for _, id := range ids {
			st, err := c.GetState(ctx, Queue, id)
			if err != nil {
				return nil, err
			}
			var o Order
			if st.Data != nil { // nil: no order yet
				if err := json.Unmarshal(st.Data, &o); err != nil {
					return nil, fmt.Errorf("state of %s: %w", id, err)
				}
			}
			m[id] = o
		}
		if done(m) {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(errors.New("the orders did not settle in time"), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
