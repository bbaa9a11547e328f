// Command tracing shows one OpenTelemetry trace going from an enqueue to
// its handler through Redis, with the otelorderly middleware pair: the
// client's span "<queue> publish" and the handler's span "<queue> process",
// its child, printed by the stdout exporter, then a summary line per span.
//
//	go run ./examples/tracing                                   # an in-memory Redis
//	go run ./examples/tracing --redis redis://127.0.0.1:6379/0  # a real one
//
// In a real program the tracer provider exports to a collector (OTLP) and
// is set once with otel.SetTracerProvider; the middlewares then need no
// options.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/otelorderly"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("tracing", flag.ContinueOnError)
	redisURL := fs.String("redis", "", "Redis URL; empty runs an in-memory Redis")
	queue := fs.String("queue", "traced", "queue")
	spans := fs.Bool("spans", true, "print each span as JSON (the stdout exporter)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rdb, closeRedis, err := openRedis(*redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()

	// Spans are printed as they end (a syncer, for the example; use a
	// batcher in production), and kept to print the summary.
	w := io.Discard
	if *spans {
		w = out
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(w), stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	kept := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(kept))
	defer tp.Shutdown(context.Background())
	opts := []otelorderly.Option{
		otelorderly.WithTracerProvider(tp),
		otelorderly.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
	}

	store, err := redisstore.New(rdb, nil)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger:     slog.New(slog.DiscardHandler),
		Middleware: []orderly.Middleware{otelorderly.ServerMiddleware(opts...)},
		Workers: []orderly.Worker{{
			Queue: *queue,
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				defer close(done)
				return nil
			},
		}},
	})
	if err != nil {
		return err
	}
	if err := node.Start(ctx); err != nil {
		return err
	}
	defer node.Stop(context.Background())

	c, err := client.New(rdb, &client.Config{Middleware: []client.Middleware{otelorderly.ClientMiddleware(opts...)}})
	if err != nil {
		return err
	}
	if err := c.Enqueue(ctx, *queue, client.Job{ID: "order-1", Payload: []byte(`{"state":"paid"}`)}); err != nil {
		return err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return errors.New("the job was not handled within 30s")
	}
	if err := node.Stop(ctx); err != nil { // the process span ends with the call
		return err
	}
	for _, s := range kept.Ended() {
		sc := s.SpanContext()
		fmt.Fprintf(out, "%-16s %-8s trace %s span %s parent %s\n", s.Name(), s.SpanKind(), sc.TraceID(), sc.SpanID(), s.Parent().SpanID())
	}
	return nil
}

// openRedis connects to the Redis at url, or to a new in-memory one when
// url is empty; closeRedis closes the client (and the in-memory Redis).
func openRedis(url string) (rdb redis.UniversalClient, closeRedis func(), err error) {
	if url != "" {
		rdb, err := redisurl.Open(url)
		if err != nil {
			return nil, nil, err
		}
		return rdb, func() { rdb.Close() }, nil
	}
	mr, err := miniredis.Run()
	if err != nil {
		return nil, nil, err
	}
	rdb = redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { rdb.Close(); mr.Close() }, nil
}
