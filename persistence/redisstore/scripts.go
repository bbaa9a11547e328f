package redisstore

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script is one Lua script, called by SHA.
type script struct {
	name   string
	src    string
	sha    string
	shaArg any // sha as a command argument, boxed once
}

func newScript(name string) *script {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	src := string(lib) + "\n" + string(body)
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	return &script{name: name, src: src, sha: sha, shaArg: sha}
}

// The store's scripts. Each file's header states its KEYS, ARGV and reply.
var (
	scriptAcquire   = newScript("acquire")
	scriptRenew     = newScript("renew")
	scriptRenewMany = newScript("renew_many")
	scriptRelease   = newScript("release")
	scriptAdvance   = newScript("advance")
	scriptEnqueue   = newScript("enqueue")
	scriptAction    = newScript("action")
	scriptMorgue    = newScript("morgue")
	scriptGet       = newScript("get")
	scriptStats     = newScript("stats")
	scriptList      = newScript("list")
	scriptScan      = newScript("scan")
	scriptMigrate   = newScript("migrate")
	scriptDowngr    = newScript("downgrade")
	scriptState     = newScript("state")
	scriptFeed      = newScript("feed")
	scriptPermits   = newScript("permits")
	scriptRate      = newScript("rate")
	scriptTick      = newScript("tick")
	scriptPoll      = newScript("poll")

	allScripts = []*script{
		scriptAcquire, scriptRenew, scriptRenewMany, scriptRelease, scriptAdvance, scriptEnqueue, scriptAction,
		scriptMorgue, scriptGet, scriptStats, scriptList, scriptScan, scriptMigrate, scriptDowngr,
		scriptState, scriptFeed,
		scriptPermits, scriptRate, scriptTick, scriptPoll,
	}
)

// call is one script call of a pipeline.
type call struct {
	s    *script
	keys []string
	// boxed, if set, holds keys as command arguments (shardKeys.boxed), so
	// that a call on the hot path does not convert each key again.
	boxed []any
	args  []any
}

// cmd returns the EVALSHA command of the call, in one argument slice.
func (cl call) cmd(ctx context.Context) *redis.Cmd {
	a := make([]any, 0, 3+len(cl.keys)+len(cl.args))
	a = append(a, "evalsha", cl.s.shaArg, len(cl.keys))
	if len(cl.boxed) == len(cl.keys) {
		a = append(a, cl.boxed...)
	} else {
		for _, k := range cl.keys {
			a = append(a, k)
		}
	}
	cmd := redis.NewCmd(ctx, append(a, cl.args...)...)
	if len(cl.keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

// run sends one script call.
func run(ctx context.Context, c redis.UniversalClient, s *script, keys []string, args ...any) *redis.Cmd {
	return runAll(ctx, c, []call{{s: s, keys: keys, args: args}})[0]
}

// runAll sends the calls in one pipeline (a lone call as a single command)
// and returns their replies in order; each reply carries its own error.
//
// The one retry rule: a call answered NOSCRIPT did not run (the server
// restarted, failed over or flushed its scripts), so its script is loaded
// (on every master of a Cluster) and the calls that got NOSCRIPT are sent
// once more. Nothing else is retried here: a script either ran or not, and
// only the caller knows whether running it again is safe.
func runAll(ctx context.Context, c redis.UniversalClient, calls []call) []*redis.Cmd {
	cmds := send(ctx, c, calls)
	var again []int
	loaded := map[*script]error{}
	for i, cmd := range cmds {
		if !isNoScript(cmd.Err()) {
			continue
		}
		s := calls[i].s
		if _, ok := loaded[s]; !ok {
			loaded[s] = c.ScriptLoad(ctx, s.src).Err()
		}
		if loaded[s] == nil {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return cmds
	}
	retry := make([]call, len(again))
	for j, i := range again {
		retry[j] = calls[i]
	}
	for j, cmd := range send(ctx, c, retry) {
		cmds[again[j]] = cmd
	}
	return cmds
}

func send(ctx context.Context, c redis.UniversalClient, calls []call) []*redis.Cmd {
	if len(calls) == 1 {
		cmd := calls[0].cmd(ctx)
		_ = c.Process(ctx, cmd) // the command carries its error
		return []*redis.Cmd{cmd}
	}
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, cl := range calls {
		cmds[i] = cl.cmd(ctx)
		_ = pipe.Process(ctx, cmds[i])
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	return cmds
}

// firstErr returns the first error of the replies that is not redis.Nil.
func firstErr(cmds []*redis.Cmd) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

func isLeaseLost(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "LEASE_LOST")
}

// loadScripts loads every script into the server: in one pipeline on a
// single server, on every master of a Cluster.
func loadScripts(ctx context.Context, c redis.UniversalClient) error {
	if _, ok := c.(*redis.ClusterClient); !ok {
		pipe := c.Pipeline()
		cmds := make([]*redis.StringCmd, len(allScripts))
		for i, s := range allScripts {
			cmds[i] = pipe.ScriptLoad(ctx, s.src)
		}
		_, _ = pipe.Exec(ctx)
		for i, cmd := range cmds {
			if err := cmd.Err(); err != nil {
				return fmt.Errorf("redisstore: load script %s: %w", allScripts[i].name, err)
			}
		}
		return nil
	}
	for _, s := range allScripts {
		if err := c.ScriptLoad(ctx, s.src).Err(); err != nil {
			return fmt.Errorf("redisstore: load script %s: %w", s.name, err)
		}
	}
	return nil
}
