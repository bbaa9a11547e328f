package redisstore

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script is one Lua script, called by SHA and loaded again when the server
// answers NOSCRIPT (after a restart or SCRIPT FLUSH).
type script struct {
	name string
	src  string
	sha  string
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
	return &script{name: name, src: src, sha: hex.EncodeToString(sum[:])}
}

// The store's scripts. Each file's header states its KEYS, ARGV and return.
var (
	scriptAcquire = newScript("acquire")
	scriptRenew   = newScript("renew")
	scriptRelease = newScript("release")
	scriptAdvance = newScript("advance")
	scriptEnqueue = newScript("enqueue")
	scriptMorgue  = newScript("morgue")
	scriptAction  = newScript("action")
	scriptList    = newScript("list")

	allScripts = []*script{
		scriptAcquire, scriptRenew, scriptRelease, scriptAdvance,
		scriptEnqueue, scriptMorgue, scriptAction, scriptList,
	}
)

// run calls the script by SHA, loading it on NOSCRIPT.
func (s *script) run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	cmd := c.EvalSha(ctx, s.sha, keys, args...)
	if isNoScript(cmd.Err()) {
		if err := c.ScriptLoad(ctx, s.src).Err(); err != nil {
			return cmd
		}
		cmd = c.EvalSha(ctx, s.sha, keys, args...)
	}
	return cmd
}

// call is one call of a script in a pipeline: its keys and arguments.
type call struct {
	keys []string
	args []any
}

// runPipelined sends calls of the script in one pipeline (one round trip)
// and returns their commands in order, and the first error among them.
//
// The one NOSCRIPT rule of the store: a call answered NOSCRIPT did not run
// (the server lost its script cache: a restart, SCRIPT FLUSH, a failover,
// or in Redis Cluster a node that never loaded it). The script is loaded
// and those calls only are sent again, once, in a second pipeline; the
// calls that ran keep their replies. So a pipelined script runs at most
// once per call, as a single call through run does, and need not be
// idempotent.
func (s *script) runPipelined(ctx context.Context, rdb redis.UniversalClient, calls []call) ([]*redis.Cmd, error) {
	cmds := s.pipeline(ctx, rdb, calls)
	var again []int
	for i, c := range cmds {
		if isNoScript(c.Err()) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		if err := rdb.ScriptLoad(ctx, s.src).Err(); err != nil {
			return cmds, fmt.Errorf("load script %s: %w", s.name, err)
		}
		retry := make([]call, len(again))
		for k, i := range again {
			retry[k] = calls[i]
		}
		for k, c := range s.pipeline(ctx, rdb, retry) {
			cmds[again[k]] = c
		}
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return cmds, err
		}
	}
	return cmds, nil
}

// pipeline sends the calls by SHA in one pipeline; each command holds its
// reply or its error.
func (s *script) pipeline(ctx context.Context, rdb redis.UniversalClient, calls []call) []*redis.Cmd {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = pipe.EvalSha(ctx, s.sha, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // the errors are the commands'
	return cmds
}

func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// loadScripts loads every script into the server.
func loadScripts(ctx context.Context, c redis.Scripter) error {
	for _, s := range allScripts {
		if err := c.ScriptLoad(ctx, s.src).Err(); err != nil {
			return fmt.Errorf("redisstore: load script %s: %w", s.name, err)
		}
	}
	return nil
}
