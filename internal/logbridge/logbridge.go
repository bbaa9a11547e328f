// Package logbridge routes the logs of Orderly's dependencies into the node's
// log/slog logger: protoactor-go (slog, but coloured INFO text on stderr by
// default) and hashicorp/memberlist (a log.Logger with "[LEVEL]" prefixes).
package logbridge

import (
	"context"
	"log/slog"

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
