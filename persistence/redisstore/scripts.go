package redisstore

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua lua/lib/*.lua
var luaFiles embed.FS

// script is one Lua script, called by SHA.
type script struct {
	name   string
	src    string
	sha    string
	shaArg any // sha as a command argument, boxed once
}

// newScript assembles lua/<name>.lua with the parts of lua/lib it declares
// in its header ("-- lib: keys clock ..."), each part after the parts it
// declares in turn, so that a script carries only what it uses
// (TestScriptsDeclareWhatTheyUse checks the declarations).
func newScript(name string) *script {
	var b strings.Builder
	seen := map[string]bool{}
	var add func(file string, stack []string)
	add = func(file string, stack []string) {
		body := luaFile(file)
		for _, part := range libOf(file, body) {
			if slices.Contains(stack, part) {
				panic(fmt.Sprintf("redisstore: lua/lib/%s.lua needs itself through %v", part, stack))
			}
			if !seen[part] {
				seen[part] = true
				add("lib/"+part, append(stack, part))
			}
		}
		b.WriteString(body)
		b.WriteString("\n")
	}
	add(name, nil)
	src := b.String()
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	return &script{name: name, src: src, sha: sha, shaArg: sha}
}

// luaFile returns lua/<file>.lua.
func luaFile(file string) string {
	b, err := luaFiles.ReadFile("lua/" + file + ".lua")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// libOf returns the parts of lua/lib a Lua file declares in its header:
// the words of its "-- lib:" line, none for "-- lib: none".
func libOf(file, body string) []string {
	for line := range strings.Lines(body) {
		if !strings.HasPrefix(line, "--") {
			break
		}
		if rest, ok := strings.CutPrefix(line, "-- lib:"); ok {
			parts := strings.Fields(rest)
			if len(parts) == 1 && parts[0] == "none" {
				return nil
			}
			return parts
		}
	}
	panic(fmt.Sprintf("redisstore: lua/%s.lua has no \"-- lib:\" line in its header", file))
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
	scriptFinished  = newScript("finished")
	scriptDrain     = newScript("drain")
	scriptImport    = newScript("import")
	scriptReshard   = newScript("reshard")
	scriptShape     = newScript("shape")

	allScripts = []*script{
		scriptAcquire, scriptRenew, scriptRenewMany, scriptRelease, scriptAdvance, scriptEnqueue, scriptAction,
		scriptMorgue, scriptGet, scriptStats, scriptList, scriptScan, scriptMigrate, scriptDowngr,
		scriptState, scriptFeed,
		scriptPermits, scriptRate, scriptTick, scriptPoll, scriptFinished,
		scriptDrain, scriptImport, scriptReshard, scriptShape,
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
	// shard is the shard an enqueue call writes to (enqueue.go).
	shard int
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
