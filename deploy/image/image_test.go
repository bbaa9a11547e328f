package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage checks the tarball make image wrote (ORDERLY_IMAGE names it):
// it is a linux image whose entrypoint is the orderly binary, run as a user
// other than root; its one layer holds the binary, /etc/passwd naming that
// user, a world-writable sticky /tmp and CA certificates; and the binary,
// taken out of the layer, runs (orderly version) when the image's
// architecture is this machine's.
func TestImage(t *testing.T) {
	path := os.Getenv("ORDERLY_IMAGE")
	if path == "" {
		t.Skip("ORDERLY_IMAGE is not set: make image-check builds the image and sets it")
	}
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" {
		t.Errorf("os %q, want linux", cf.OS)
	}
	if got := strings.Join(cf.Config.Entrypoint, " "); got != "/usr/local/bin/orderly" {
		t.Errorf("entrypoint %q, want /usr/local/bin/orderly", got)
	}
	if u := cf.Config.User; u == "" || u == "0" || strings.HasPrefix(u, "0:") || strings.HasPrefix(u, "root") {
		t.Errorf("user %q: the image must not run as root", u)
	}
	if u := cf.Config.User; u != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (nonroot, as the chart's runAsUser)", u)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Errorf("%d layers, want 1", len(layers))
	}

	files := map[string]*tar.Header{}
	var binary, passwd []byte
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(strings.TrimSuffix(h.Name, "/"), "/")
		files[name] = h
		switch name {
		case "usr/local/bin/orderly":
			if binary, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		case "etc/passwd":
			if passwd, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if h := files["usr/local/bin/orderly"]; h == nil || h.Mode&0o111 == 0 {
		t.Fatalf("no executable /usr/local/bin/orderly in the image")
	}
	if !strings.Contains(string(passwd), ":65532:65532:") {
		t.Errorf("/etc/passwd names no user 65532:\n%s", passwd)
	}
	if h := files["tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o1777 != 0o1777 {
		t.Errorf("/tmp is missing or not mode 1777")
	}
	if h := files["etc/ssl/certs/ca-certificates.crt"]; h == nil || h.Size == 0 {
		t.Errorf("no CA certificates: rediss:// and https webhooks could not verify their servers")
	}
	if len(binary) < 4 || string(binary[1:4]) != "ELF" {
		t.Fatalf("/usr/local/bin/orderly is not an ELF binary")
	}

	if runtime.GOOS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Logf("image is linux/%s, this machine %s/%s: not running the binary", cf.Architecture, runtime.GOOS, runtime.GOARCH)
		return
	}
	bin := filepath.Join(t.TempDir(), "orderly")
	if err := os.WriteFile(bin, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = []string{} // nothing of this machine's environment, as in the container
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("orderly version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "orderly ") {
		t.Errorf("orderly version printed %q", out)
	}
	if v := cf.Config.Labels["org.opencontainers.image.version"]; v != "" && !strings.Contains(string(out), v) {
		t.Errorf("orderly version printed %q; the image's label says %s", out, v)
	}
	t.Logf("%s: %s", path, strings.TrimSpace(string(out)))
}
