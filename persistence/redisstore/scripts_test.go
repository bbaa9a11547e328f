package redisstore

import (
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// luaCode returns a Lua file's code without its comments and with its
// strings emptied, so that only identifiers the code uses remain.
func luaCode(src string) string {
	for _, re := range []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`(?s)--\[(=*)\[.*?\]=*\]`), ""},
		{regexp.MustCompile(`--[^\n]*`), ""},
		{regexp.MustCompile(`(?s)\[(=*)\[.*?\]=*\]`), `""`},
		{regexp.MustCompile(`"(\\.|[^"\\\n])*"`), `""`},
		{regexp.MustCompile(`'(\\.|[^'\\\n])*'`), `''`},
	} {
		src = re.re.ReplaceAllString(src, re.with)
	}
	return src
}

var (
	luaIdent = regexp.MustCompile(`(^|[^\w.:])([A-Za-z_]\w*)`)
	luaLocal = regexp.MustCompile(`(?m)^local (?:function (\w+)|([\w, ]+?)\s*(?:=|$))`)
)

// luaDefs returns the names a Lua file defines at its top level.
func luaDefs(code string) map[string]bool {
	defs := map[string]bool{}
	for _, m := range luaLocal.FindAllStringSubmatch(code, -1) {
		if m[1] != "" {
			defs[m[1]] = true
			continue
		}
		for n := range strings.SplitSeq(m[2], ",") {
			defs[strings.TrimSpace(n)] = true
		}
	}
	return defs
}

// Each Lua file declares in its header ("-- lib:") exactly the parts of
// lua/lib whose names its code uses: a script that used a part it does
// not declare would fail on the server when that code runs, and one that
// declared a part it does not use would carry it for nothing on every
// call.
func TestScriptsDeclareWhatTheyUse(t *testing.T) {
	parts, err := fs.Glob(luaFiles, "lua/lib/*.lua")
	require.NoError(t, err)
	owner := map[string]string{} // name -> the part that defines it
	for _, p := range parts {
		part := strings.TrimSuffix(path.Base(p), ".lua")
		for name := range luaDefs(luaCode(luaFile("lib/" + part))) {
			require.Empty(t, owner[name], "%s is defined by lib/%s.lua and lib/%s.lua", name, owner[name], part)
			owner[name] = part
		}
	}
	scripts, err := fs.Glob(luaFiles, "lua/*.lua")
	require.NoError(t, err)
	files := append(scripts, parts...)
	require.NotEmpty(t, owner)
	for _, f := range files {
		file := strings.TrimSuffix(strings.TrimPrefix(f, "lua/"), ".lua")
		body := luaFile(file)
		code := luaCode(body)
		own := luaDefs(code)
		var used []string
		for _, m := range luaIdent.FindAllStringSubmatch(code, -1) {
			if p := owner[m[2]]; p != "" && !own[m[2]] && !slices.Contains(used, p) && "lib/"+p != file {
				used = append(used, p)
			}
		}
		declared := libOf(file, body)
		require.ElementsMatch(t, used, declared, "lua/%s.lua declares lib: %v, and its code uses %v", file, declared, used)
	}
}

// A script carries each part it needs once, after the parts that part
// needs, and nothing it does not need.
func TestScriptAssembly(t *testing.T) {
	src := scriptRenew.src
	require.Equal(t, 1, strings.Count(src, "-- lib/keys.lua:"))
	require.Less(t, strings.Index(src, "-- lib/keys.lua:"), strings.Index(src, "-- lib/lease.lua:"), "keys before the lease check that reads them")
	require.Less(t, strings.Index(src, "-- lib/fence.lua:"), strings.Index(src, "-- lib/lease.lua:"))
	require.NotContains(t, src, "-- lib/cold.lua:")
	require.True(t, strings.HasSuffix(src, luaFile("renew")+"\n"), "the script comes last")

	require.NotContains(t, scriptTick.src, "-- lib/", "tick.lua needs no part")
	adv := scriptAdvance.src
	for _, p := range []string{"keys", "fence", "clock", "fields", "stateful", "batch", "cold"} {
		require.Equal(t, 1, strings.Count(adv, "-- lib/"+p+".lua:"), p)
	}
}
