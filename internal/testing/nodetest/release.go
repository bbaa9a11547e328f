package nodetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// PreviousRelease is the last commit of the previous release line (storage
// layout 1): the nodes a rolling upgrade replaces.
const PreviousRelease = "1e73f1f"

// RequirePreviousEnv names the environment variable that makes a missing
// previous release (no git, or a checkout without history) a test failure
// instead of a skip; CI sets it.
const RequirePreviousEnv = "ORDERLY_REQUIRE_PREVIOUS_RELEASE"

var releases = struct {
	sync.Mutex
	byRev map[string]*build
}{byRev: map[string]*build{}}

// ReleaseBinary builds cmd/node as it was at the git revision rev of this
// repository (git archive into a temporary directory, then go build there,
// without the race detector: only its behaviour on the wire matters) and
// returns the binary's path. It builds cmd/node rather than cmd/orderly
// because every revision has it. It is built once per test binary. Without git
// or without that revision in the checkout the test is skipped, or fails
// when RequirePreviousEnv is set.
func ReleaseBinary(t testing.TB, rev string) string {
	t.Helper()
	releases.Lock()
	b := releases.byRev[rev]
	if b == nil {
		b = &build{}
		releases.byRev[rev] = b
	}
	releases.Unlock()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..") // internal/testing/nodetest
	if err := exec.Command("git", "-C", root, "cat-file", "-e", rev+"^{commit}").Run(); err != nil {
		msg := fmt.Sprintf("revision %s of the previous release is not in this checkout (git: %v)", rev, err)
		if os.Getenv(RequirePreviousEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	b.once.Do(func() {
		buildDirOnce.Do(func() { buildDir, b.err = os.MkdirTemp("", "orderly-bin-") })
		if b.err != nil {
			return
		}
		src := filepath.Join(buildDir, "src-"+rev)
		if b.err = os.MkdirAll(src, 0o755); b.err != nil {
			return
		}
		archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, rev, src)
		if out, err := archive.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("git archive %s: %v\n%s", rev, err, out)
			return
		}
		b.path = filepath.Join(buildDir, "orderly-"+rev)
		cmd := exec.Command("go", "build", "-o", b.path, "./cmd/node")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build ./cmd/node at %s: %v\n%s", rev, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
