package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	runtimepprof "runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// On SIGUSR1 the node writes a debug dump and keeps running (Lowkiq's kill
// -TTIN): the state of each shard it should serve (queue, shard, epoch,
// serving, paused, the ids in flight, the last problem) as log lines, then
// the stacks of every goroutine, raw on the log's output after a log line
// in the text format, as one log record's "goroutines" in the JSON format.
// SIGQUIT is left to Go, which dumps the goroutines and exits.

// dumpTimeout bounds the reads of a dump (the node's status, the in-flight
// batches of each queue).
const dumpTimeout = 5 * time.Second

// maxDumpIDs is how many in-flight ids a dump lists per shard.
const maxDumpIDs = 20

// dumper writes the debug dump, one at a time.
type dumper struct {
	p       *process
	out     io.Writer // the log's output
	running atomic.Bool
}

// start writes a dump in the background, unless one is being written.
func (d *dumper) start() {
	if !d.running.CompareAndSwap(false, true) {
		d.p.log.Info("debug dump: one is being written already")
		return
	}
	go func() {
		defer d.running.Store(false)
		d.write()
	}()
}

// write writes the shard states, then the goroutine stacks.
func (d *dumper) write() {
	log := d.p.log
	ctx, cancel := context.WithTimeout(context.Background(), dumpTimeout)
	defer cancel()
	log.Info("debug dump begins (SIGUSR1): shard states, then goroutine stacks; the node keeps running")
	d.shards(ctx)
	var stacks bytes.Buffer
	_ = runtimepprof.Lookup("goroutine").WriteTo(&stacks, 2)
	n := bytes.Count(stacks.Bytes(), []byte("\ngoroutine ")) + 1
	if d.p.cfg.Node.LogFormat == "json" {
		log.Info("debug dump: goroutines", "count", n, "goroutines", stacks.String())
	} else {
		log.Info("debug dump: goroutines follow", "count", n)
		_, _ = d.out.Write(stacks.Bytes())
	}
	log.Info("debug dump ends")
}

// shards logs the state of each shard the node should serve.
func (d *dumper) shards(ctx context.Context) {
	node, log := d.p.node, d.p.log
	st, err := node.Status(ctx)
	if err != nil {
		log.Warn("debug dump: no shard states", "err", err)
		return
	}
	log.Info("debug dump: node", "name", node.Name(), "assigned", st.Assigned, "serving", st.Serving,
		"waiting", st.Waiting, "running", st.Running)
	inFlight := map[persistence.ShardRef][]string{}
	for _, q := range node.Queues() {
		batches, err := d.p.store.Processing(ctx, q)
		if err != nil {
			log.Warn("debug dump: no in-flight ids", "queue", q, "err", err)
			continue
		}
		for _, b := range batches {
			if b.Owner != node.Name() {
				continue
			}
			ref := persistence.ShardRef{Queue: q, Shard: b.Shard}
			for _, j := range b.Jobs {
				inFlight[ref] = append(inFlight[ref], j.ID)
			}
		}
	}
	for _, s := range st.Shards {
		ids := inFlight[s.Ref]
		attrs := []any{"queue", s.Ref.Queue, "shard", s.Ref.Shard, "epoch", s.Epoch, "serving", s.Serving,
			"paused", node.QueuePaused(s.Ref.Queue), "in_flight", len(ids), "ids", strings.Join(ids[:min(len(ids), maxDumpIDs)], ",")}
		if s.Err != "" {
			attrs = append(attrs, "err", s.Err)
		}
		if !s.StuckSince.IsZero() {
			attrs = append(attrs, "stuck_since", s.StuckSince)
		}
		log.Info("debug dump: shard", attrs...)
	}
}

// serveDebug starts the debug listener when debug_addr is set:
// net/http/pprof under /debug/pprof/, without authentication. A missing
// host listens on 127.0.0.1; another one than loopback is warned about.
// stop closes it.
func (p *process) serveDebug() (stop func(), err error) {
	addr := p.cfg.Node.DebugAddr
	if addr == "" {
		return func() {}, nil
	}
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the debug listener (debug_addr) on %s: %w", addr, err)
	}
	if !isLoopback(ln.Addr()) {
		p.log.Warn("the debug listener (debug_addr) is reachable from other hosts: it serves profiles, goroutine stacks and the command line without authentication; keep it on loopback", "debug_addr", ln.Addr().String())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Warn("debug listener stopped", "err", err)
		}
	}()
	p.log.Info("debug listener (pprof) listening", "debug_addr", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { _ = srv.Close(); <-done }, nil
}
