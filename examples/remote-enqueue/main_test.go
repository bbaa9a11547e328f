package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

func TestMain(m *testing.M) {
	redistest.AtExit(nodetest.Cleanup)
	redistest.AtExit(func() {
		if exampleDir != "" {
			os.RemoveAll(exampleDir)
		}
	})
	redistest.Main(m)
}

var (
	exampleOnce sync.Once
	exampleDir  string // holds the example's binary
	exampleBin  string
	exampleErr  error
)

// exampleBinary builds the example once per test binary and returns its
// path.
func exampleBinary(t *testing.T) string {
	t.Helper()
	exampleOnce.Do(func() {
		if exampleDir, exampleErr = os.MkdirTemp("", "remote-enqueue-"); exampleErr != nil {
			return
		}
		exampleBin = filepath.Join(exampleDir, "remote-enqueue")
		if out, err := exec.Command("go", "build", "-o", exampleBin, ".").CombinedOutput(); err != nil {
			exampleErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if exampleErr != nil {
		t.Fatal(exampleErr)
	}
	return exampleBin
}

// TestRemoteEnqueue runs the example, as a user would, against a node
// process: the job goes in by actor message through protoactor remote and
// the node handles it.
//
// The example runs as its own process each time: protoactor's remote sets
// gRPC's process-wide logger on every start, which races with the gRPC
// goroutines of an earlier remote in the same process.
func TestRemoteEnqueue(t *testing.T) {
	t.Parallel()
	bin := exampleBinary(t)

	srv := redistest.NewServer(t, redistest.Options{})
	port, err := redistest.FreePort()
	require.NoError(t, err)
	actorAddr := "127.0.0.1:" + strconv.Itoa(port)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Args: []string{"--actor-addr", actorAddr}})
	n.WaitReady()

	example := func(args ...string) (string, error) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), err
	}

	got, err := example("--http", strings.TrimPrefix(n.HTTP, "http://"), "--id", "order-9", "--payload", `{"state":"paid"}`)
	require.NoError(t, err, got)
	require.Equal(t, "enqueued 1 job(s) into default through "+actorAddr+"\n", got)
	require.Eventually(t, func() bool { return strings.Contains(n.Logs(), "job_id=order-9") }, 10*time.Second, 10*time.Millisecond)

	// Headers travel in the message and reach the handler (docs/contract.md §10).
	got, err = example("--actor", actorAddr, "--id", "order-h", "--payload", `1`, "--header", "tenant=acme", "--header", "k=v")
	require.NoError(t, err, got)
	require.Eventually(t, func() bool { return strings.Contains(n.Logs(), `headers0="k=v tenant=acme"`) }, 10*time.Second, 10*time.Millisecond)

	got, err = example("--actor", actorAddr, "--queue", "nope", "--id", "x")
	require.Error(t, err)
	require.Contains(t, got, "CODE_UNKNOWN_QUEUE")
	got, err = example("--actor", actorAddr, "--id", "")
	require.Error(t, err)
	require.Contains(t, got, "--id is required")
}

// A node with an actor token refuses a client without it, or with another
// one, and stores nothing; the client with the token enqueues.
func TestRemoteEnqueueToken(t *testing.T) {
	t.Parallel()
	bin := exampleBinary(t)

	srv := redistest.NewServer(t, redistest.Options{})
	port, err := redistest.FreePort()
	require.NoError(t, err)
	actorAddr := "127.0.0.1:" + strconv.Itoa(port)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Args: []string{"--actor-addr", actorAddr, "--actor-token", "s3cret"},
		Config: "queues:\n  - name: default\n    handler: {type: log}\n"})
	n.WaitReady()
	example := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"--actor", actorAddr, "--timeout", "3s"}, args...)...).CombinedOutput()
		return string(out), err
	}

	got, err := example("--id", "anonymous")
	require.Error(t, err, got)
	require.Contains(t, got, "no answer")
	got, err = example("--id", "guessed", "--token", "guess")
	require.Error(t, err, got)
	require.Contains(t, got, "no answer")
	require.Contains(t, n.Logs(), "actor remote refused a connection without a valid token")
	code, body := n.Do("GET", "/api/v1/queues/default", nil)
	require.Equal(t, 200, code)
	require.Contains(t, string(body), `"length":0`, string(body))

	got, err = example("--id", "with-token", "--token", "s3cret", "--timeout", "30s")
	require.NoError(t, err, got)
	require.Contains(t, got, "enqueued 1 job(s)")
	require.Eventually(t, func() bool { return strings.Contains(n.Logs(), "job_id=with-token") }, 30*time.Second, 10*time.Millisecond)
	require.NotContains(t, n.Logs(), "job_id=anonymous")
	require.NotContains(t, n.Logs(), "job_id=guessed")
}

// A node serving mutual TLS refuses a client without a certificate its CA
// signed (plaintext, or a certificate of another CA) and stores nothing;
// the client with one enqueues.
func TestRemoteEnqueueMutualTLS(t *testing.T) {
	t.Parallel()
	bin := exampleBinary(t)
	dir := t.TempDir()
	ca := newCA(t, "orderly test CA")
	other := newCA(t, "another CA")
	nodeCert, nodeKey := ca.issue(t, dir, "node")
	clientCert, clientKey := ca.issue(t, dir, "client")
	strangerCert, strangerKey := other.issue(t, dir, "stranger")
	caFile := ca.write(t, dir)

	srv := redistest.NewServer(t, redistest.Options{})
	port, err := redistest.FreePort()
	require.NoError(t, err)
	actorAddr := "127.0.0.1:" + strconv.Itoa(port)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(),
		Args:   []string{"--actor-addr", actorAddr, "--actor-tls-cert", nodeCert, "--actor-tls-key", nodeKey, "--actor-tls-ca", caFile},
		Config: "queues:\n  - name: default\n    handler: {type: log}\n"})
	n.WaitReady()
	example := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"--actor", actorAddr, "--timeout", "3s"}, args...)...).CombinedOutput()
		return string(out), err
	}

	got, err := example("--id", "plaintext")
	require.Error(t, err, got)
	require.Contains(t, got, "no answer")
	got, err = example("--id", "stranger", "--tls-cert", strangerCert, "--tls-key", strangerKey, "--tls-ca", caFile)
	require.Error(t, err, got)
	require.Contains(t, got, "no answer")
	code, body := n.Do("GET", "/api/v1/queues/default", nil)
	require.Equal(t, 200, code)
	require.Contains(t, string(body), `"length":0`, string(body))

	got, err = example("--id", "with-cert", "--tls-cert", clientCert, "--tls-key", clientKey, "--tls-ca", caFile, "--timeout", "30s")
	require.NoError(t, err, got)
	require.Contains(t, got, "enqueued 1 job(s)")
	require.Eventually(t, func() bool { return strings.Contains(n.Logs(), "job_id=with-cert") }, 30*time.Second, 10*time.Millisecond)
	require.NotContains(t, n.Logs(), "job_id=plaintext")
	require.NotContains(t, n.Logs(), "job_id=stranger")
}

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, der: der}
}

// issue writes a certificate for 127.0.0.1 (server and client use) and
// its key into dir, and returns their paths.
func (ca *testCA) issue(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile
}

func (ca *testCA) write(t *testing.T, dir string) string {
	t.Helper()
	f := filepath.Join(dir, ca.cert.Subject.CommonName+".ca.crt")
	require.NoError(t, os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der}), 0o600))
	return f
}
