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
