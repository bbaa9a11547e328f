// Package logbridge routes the logs of Orderly's dependencies into the node's
// log/slog logger: protoactor-go (slog, but coloured INFO text on stderr by
// default) and hashicorp/memberlist (a log.Logger with "[LEVEL]" prefixes).
package logbridge

import (
	"context"
	"fmt"
	stdlog "log"
	"log/slog"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
)

// Protoactor returns a protoactor logger factory that logs through log with
// component=actor. protoactor's INFO lines (system started, dead letters,
// "Recovering" without a stack) are routine here, so they are demoted to
// DEBUG; warnings and errors keep their level.
func Protoactor(log *slog.Logger) func(*actor.ActorSystem) *slog.Logger {
	return func(*actor.ActorSystem) *slog.Logger {
		return slog.New(demote{h: log.Handler()}).With("component", "actor")
	}
}

// demote lowers INFO records to DEBUG.
type demote struct{ h slog.Handler }

func (d demote) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		l = slog.LevelDebug
	}
	return d.h.Enabled(ctx, l)
}

func (d demote) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return d.h.Handle(ctx, r)
}

func (d demote) WithAttrs(as []slog.Attr) slog.Handler { return demote{h: d.h.WithAttrs(as)} }
func (d demote) WithGroup(name string) slog.Handler    { return demote{h: d.h.WithGroup(name)} }

// Memberlist returns a log.Logger for memberlist that writes through log
// with component=memberlist, mapping memberlist's "[DEBUG]", "[INFO]",
// "[WARN]" and "[ERR]" prefixes to slog levels.
func Memberlist(log *slog.Logger) *stdlog.Logger {
	return stdlog.New(memberlistWriter{log: log.With("component", "memberlist")}, "", 0)
}

type memberlistWriter struct{ log *slog.Logger }

func (w memberlistWriter) Write(p []byte) (int, error) {
	s := strings.TrimSpace(string(p))
	level := slog.LevelInfo
	switch {
	case strings.HasPrefix(s, "[DEBUG]"):
		level = slog.LevelDebug
	case strings.HasPrefix(s, "[WARN]"):
		level = slog.LevelWarn
	case strings.HasPrefix(s, "[ERR]"):
		level = slog.LevelError
	}
	if i := strings.Index(s, "] "); i >= 0 && strings.HasPrefix(s, "[") {
		s = s[i+2:]
	}
	s = strings.TrimPrefix(s, "memberlist: ")
	w.log.Log(context.Background(), level, s)
	return len(p), nil
}

// GoRedis returns a logger for go-redis (redis.SetLogger) that writes its
// messages (connection pool errors, mostly) through log at WARN with
// component=redis.
func GoRedis(log *slog.Logger) interface {
	Printf(ctx context.Context, format string, v ...any)
} {
	return goRedisLogger{log: log.With("component", "redis")}
}

type goRedisLogger struct{ log *slog.Logger }

func (g goRedisLogger) Printf(ctx context.Context, format string, v ...any) {
	g.log.Warn(strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "))
}
