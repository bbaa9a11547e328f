// Command image writes a container image of the orderly binary as a tarball
// (docker save's format, which docker load, podman load, skopeo, kind load
// and crane push read), without a container daemon or a base image: one
// layer holding the static binary, the CA certificates of the build machine,
// /etc/passwd and /etc/group naming the nonroot user (65532) and a /tmp.
//
//	go run . -binary ../../bin/orderly-linux-amd64 -out ../../dist/orderly-image.tar -tag orderly:0.1.0
//
// It is a module of its own so that Orderly's module graph does not carry
// go-containerregistry. make image runs it.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// UID and GID of the user the image runs as: distroless's "nonroot".
const nonroot = 65532

func main() {
	binary := flag.String("binary", "", "static linux orderly binary to put at /usr/local/bin/orderly")
	out := flag.String("out", "dist/orderly-image.tar", "tarball to write")
	tag := flag.String("tag", "orderly:latest", "image reference recorded in the tarball")
	arch := flag.String("arch", runtime.GOARCH, "architecture of the binary")
	version := flag.String("version", "", "version recorded as the image's org.opencontainers.image.version label")
	cacerts := flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to put at /etc/ssl/certs/ca-certificates.crt; empty: none")
	flag.Parse()
	if err := run(*binary, *out, *tag, *arch, *version, *cacerts); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binary, out, tag, arch, version, cacerts string) error {
	if binary == "" {
		return fmt.Errorf("-binary is required")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	var ca []byte
	if cacerts != "" {
		if ca, err = os.ReadFile(cacerts); err != nil {
			return fmt.Errorf("%w (set -ca-certificates= to build without CA certificates)", err)
		}
	}
	layerTar, err := rootfs(bin, ca)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{"/usr/local/bin/orderly"}
	cf.Config.Cmd = nil
	cf.Config.User = fmt.Sprintf("%d:%d", nonroot, nonroot)
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
	}
	cf.Config.ExposedPorts = map[string]struct{}{"8080/tcp": {}, "7946/tcp": {}, "7946/udp": {}}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":  "orderly",
		"org.opencontainers.image.source": "https://github.com/orderlyhq/orderly",
	}
	if version != "" {
		cf.Config.Labels["org.opencontainers.image.version"] = version
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// epoch is the time of every file and of the image: the same binary gives
// the same image.
var epoch = time.Unix(0, 0).UTC()

// rootfs is the image's only layer, as an uncompressed tar.
func rootfs(bin, ca []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(path string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path + "/", Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
	}
	file := func(path string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := io.Copy(tw, bytes.NewReader(data))
		return err
	}
	passwd := strings.Join([]string{
		"root:x:0:0:root:/root:/sbin/nologin",
		fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin", nonroot, nonroot),
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin", ""}, "\n")
	group := strings.Join([]string{"root:x:0:", fmt.Sprintf("nonroot:x:%d:", nonroot), "nobody:x:65534:", ""}, "\n")
	steps := []func() error{
		func() error { return dir("etc", 0o755) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("tmp", 0o1777) },
		func() error { return dir("usr", 0o755) },
		func() error { return dir("usr/local", 0o755) },
		func() error { return dir("usr/local/bin", 0o755) },
		func() error { return file("usr/local/bin/orderly", 0o755, bin) },
	}
	if ca != nil {
		steps = append(steps,
			func() error { return dir("etc/ssl", 0o755) },
			func() error { return dir("etc/ssl/certs", 0o755) },
			func() error { return file("etc/ssl/certs/ca-certificates.crt", 0o644, ca) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
