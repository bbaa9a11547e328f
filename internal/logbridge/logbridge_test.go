package logbridge

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

func TestMemberlistLevels(t *testing.T) {
	var buf bytes.Buffer
	l := Memberlist(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Print("[DEBUG] memberlist: Stream connection from=127.0.0.1:1")
	l.Print("[WARN] memberlist: Refuting a suspect message")
	l.Print("[ERR] memberlist: Failed to send")
	l.Print("no prefix")
	out := buf.String()
	require.Contains(t, out, `level=DEBUG msg="Stream connection from=127.0.0.1:1" component=memberlist`)
	require.Contains(t, out, `level=WARN msg="Refuting a suspect message"`)
	require.Contains(t, out, `level=ERROR msg="Failed to send"`)
	require.Contains(t, out, `level=INFO msg="no prefix"`)
}

func TestProtoactorInfoIsDebug(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	l := Protoactor(base)(&actor.ActorSystem{})
	l.Info("actor system started")
	l.Warn("dead letter storm")
	require.NotContains(t, buf.String(), "actor system started")
	require.Contains(t, buf.String(), `level=WARN msg="dead letter storm" component=actor`)
}
