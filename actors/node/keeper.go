package node

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/internal/clock"
)

// KeeperConfig configures a keeper: the actor that keeps a well-known
// top-level actor alive under its name.
type KeeperConfig struct {
	// PID is the kept actor, spawned by the caller under Name at the root.
	PID *actor.PID
	// Props spawn it again.
	Props *actor.Props
	// Name is its well-known name.
	Name string
	// Delay is the wait before spawning it again, so that an actor that
	// keeps failing does not spin [time.Second].
	Delay  time.Duration
	Logger *slog.Logger
	// Clock times the delay [clock.Real()].
	Clock clock.Clock
}

// KeeperProps returns the props of a keeper. The keeper watches the kept
// actor and, whenever it stops (its guardian gave up restarting it, or a
// Stop reached it), spawns it again under the same name after Delay, so
// that PIDs held elsewhere (the facade's, a remote client's) reach the new
// instance. Stop the keeper before the kept actor when the node stops.
func KeeperProps(cfg KeeperConfig) *actor.Props {
	if cfg.Delay <= 0 {
		cfg.Delay = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	return actor.PropsFromProducer(func() actor.Actor { return &keeper{cfg: cfg, pid: cfg.PID} })
}

type keeper struct {
	cfg   KeeperConfig
	pid   *actor.PID
	timer func() bool // stops the pending respawn; called when the keeper stops
}

// respawn asks the keeper to spawn the kept actor again.
type respawn struct{}

func (k *keeper) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		c.Watch(k.pid)
	case *actor.Terminated:
		if m.Who.GetId() != k.cfg.Name {
			return
		}
		k.cfg.Logger.Warn("a well-known actor stopped; starting it again", "actor", k.cfg.Name, "after", k.cfg.Delay)
		k.later(c)
	case respawn:
		k.timer = nil
		pid, err := c.ActorSystem().Root.SpawnNamed(k.cfg.Props, k.cfg.Name)
		if err != nil {
			// The old instance is not unregistered yet: try again.
			k.cfg.Logger.Warn("cannot start a well-known actor again yet", "actor", k.cfg.Name, "err", err)
			k.later(c)
			return
		}
		k.pid = pid
		c.Watch(pid)
		k.cfg.Logger.Info("well-known actor started again", "actor", k.cfg.Name)
	case *actor.Stopping:
		if k.timer != nil {
			k.timer()
		}
		c.Unwatch(k.pid)
	}
}

// later schedules a respawn after Delay.
func (k *keeper) later(c actor.Context) {
	self, root := c.Self(), c.ActorSystem().Root
	k.timer = k.cfg.Clock.AfterFunc(k.cfg.Delay, func() { root.Send(self, respawn{}) })
}
