package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

// rawRequest sends request on a new connection to addr and returns the
// answer and its body, waiting at most wait. The request is written while
// the answer is read, as a server may answer (and close) before it has
// read a large request.
func rawRequest(t *testing.T, addr, request string, wait time.Duration) (*http.Response, string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	written := make(chan struct{})
	go func() {
		defer close(written)
		_, _ = io.WriteString(c, request) // fails once the server closes: it answered
	}()
	t.Cleanup(func() {
		c.Close()
		<-written
	})
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res, string(body), err
}

// A node with a token answers a request without it at once, even when the
// request announces a body it never sends, and closes the connection.
func TestUnauthenticatedBodyIsAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	n := nodetest.Start(t, nodetest.Options{Args: []string{"--http-token", "s3cret"}})
	start := time.Now()
	res, _, err := rawRequest(t, fmt.Sprintf("127.0.0.1:%d", n.Port),
		"POST /api/v1/queues/default/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[", 10*time.Second)
	require.NoError(t, err, "no answer within 10s")
	t.Logf("answered %d after %s", res.StatusCode, time.Since(start).Round(time.Millisecond))
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.True(t, res.Close)
}

// A node without a token answers only to its own names: a page whose name
// rebinds to 127.0.0.1 gets 421; http_allowed_hosts adds names.
func TestHostCheckOnNode(t *testing.T) {
	t.Parallel()
	n := nodetest.Start(t, nodetest.Options{Env: []string{"ORDERLY_HTTP_ALLOWED_HOSTS=orderly.test"}})
	addr := fmt.Sprintf("127.0.0.1:%d", n.Port)
	for host, status := range map[string]int{
		"evil.example:" + fmt.Sprint(n.Port): 421, "orderly.test": 202, "localhost": 202, addr: 202,
	} {
		body := `[{"id": "h"}]`
		res, _, err := rawRequest(t, addr, fmt.Sprintf("POST /api/v1/queues/default/jobs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body), 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, status, res.StatusCode, "Host %s", host)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and localhost, and its key,
// into dir, and returns their paths and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "orderly test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// The API and the dashboard serve HTTPS with --http-tls-cert and
// --http-tls-key, over HTTP/2 when the client offers it.
func TestHTTPS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	n := nodetest.Launch(t, nodetest.Options{Args: []string{"--http-tls-cert", certFile, "--http-tls-key", keyFile, "--http-token", "s3cret"}})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, DisableKeepAlives: true}}
	base := fmt.Sprintf("https://127.0.0.1:%d", n.Port)
	do := func(method, path, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer s3cret")
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(b)
	}
	require.Eventually(t, func() bool {
		res, err := client.Get(base + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "https /readyz:\n%s", n.Logs())

	res, body := do("POST", "/api/v1/queues/default/jobs", `[{"id": "tls-1"}]`)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	require.Equal(t, "HTTP/2.0", res.Proto)
	res, body = do("GET", "/", "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, "<html")
	require.Contains(t, n.Logs(), "https://127.0.0.1:")

	// Plain HTTP on the HTTPS port is refused.
	code, _ := n.Do("GET", "/healthz", nil)
	require.Equal(t, http.StatusBadRequest, code)

	// The CLI talks HTTPS, trusting the certificate through SSL_CERT_FILE.
	cli := exec.Command(nodetest.Binary(t), "stats", "--json", "--http", base, "--http-token", "s3cret")
	cli.Env = append(os.Environ(), "SSL_CERT_FILE="+certFile)
	out, err := cli.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), `"default"`)

	// A key that does not match, or a missing file, stops the node at start.
	otherCert, _, _ := selfSigned(t, t.TempDir())
	bad := nodetest.Launch(t, nodetest.Options{Args: []string{"--http-tls-cert", otherCert, "--http-tls-key", keyFile}})
	require.Equal(t, 1, bad.Wait(30*time.Second))
	require.Contains(t, bad.Logs(), "http_tls_cert "+otherCert)
	bad = nodetest.Launch(t, nodetest.Options{Args: []string{"--http-tls-cert", certFile}})
	require.Equal(t, 2, bad.Wait(30*time.Second))
	require.Contains(t, bad.Logs(), "give both (the certificate and its key) or neither")
}

// A token sent in plain HTTP beyond loopback can be read on the way: the
// node says so at start.
func TestTokenInPlaintextWarning(t *testing.T) {
	t.Parallel()
	const warning = "its bearer token travels unencrypted"
	certFile, keyFile, _ := selfSigned(t, t.TempDir())
	for _, tc := range []struct {
		name string
		args []string
		warn bool
	}{
		{"public plain", []string{"--http-token", "s3cret"}, true},
		{"public TLS", []string{"--http-token", "s3cret", "--http-tls-cert", certFile, "--http-tls-key", keyFile}, false},
		{"loopback plain", nil, false},
	} {
		port, err := redistest.FreePort()
		require.NoError(t, err)
		host := "0.0.0.0"
		if tc.args == nil {
			host, tc.args = "127.0.0.1", []string{"--http-token", "s3cret"}
		}
		n := nodetest.Launch(t, nodetest.Options{HTTPPort: port, Args: append(tc.args, "--http", fmt.Sprintf("%s:%d", host, port))})
		require.Eventually(t, func() bool { return strings.Contains(n.Logs(), "HTTP API listening") }, 30*time.Second, 20*time.Millisecond, n.Logs())
		require.Equal(t, tc.warn, strings.Contains(n.Logs(), warning), "%s:\n%s", tc.name, n.Logs())
		n.Kill()
	}
}

// While Redis refuses writes (out of memory with noeviction), an enqueue
// answers 503 saying that part of it may be stored and that a retry is
// safe, /readyz says not ready and why, and orderly_store_writable is 0;
// all recover once Redis has room again.
func TestStoreRefusesWrites(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{Args: []string{"--maxmemory", "4mb", "--maxmemory-policy", "noeviction"}})
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: "queues: [{name: fill, shards: 4, handler: {type: noop}}]"})
	n.WaitReady()

	payload := strings.Repeat("x", 50_000)
	var code int
	var answer map[string]any
	for i := 0; i < 200; i++ {
		var jobs []string
		for k := range 10 {
			jobs = append(jobs, fmt.Sprintf(`{"id": "f-%d-%d", "payload": %q, "perform_in": 86400}`, i, k, payload))
		}
		code, answer = post(t, n, "/api/v1/queues/fill/jobs", "["+strings.Join(jobs, ",")+"]")
		if code != http.StatusAccepted {
			break
		}
	}
	require.Equal(t, http.StatusServiceUnavailable, code, "%v", answer)
	require.Contains(t, answer["error"], "part of the request may have been stored: retrying the same request is safe")

	readyz := func() (int, string) {
		code, body := n.Do("GET", "/readyz", nil)
		return code, string(body)
	}
	code, body := readyz()
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Contains(t, body, "the store refuse")
	require.Contains(t, body, "OOM command not allowed")
	require.Contains(t, metric(t, n, "orderly_store_writable"), "orderly_store_writable 0")

	rdb := srv.Client(t)
	require.NoError(t, rdb.ConfigSet(context.Background(), "maxmemory", "0").Err())
	require.Eventually(t, func() bool { code, _ := readyz(); return code == http.StatusOK }, 30*time.Second, 100*time.Millisecond)
	require.Contains(t, metric(t, n, "orderly_store_writable"), "orderly_store_writable 1")
	c, out := post(t, n, "/api/v1/queues/fill/jobs", `[{"id": "after"}]`)
	require.Equal(t, http.StatusAccepted, c, "%v", out)
	keys, err := rdb.Keys(context.Background(), "*write-probe*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "the write probe creates nothing")
}

// metric returns the lines of /metrics that start with name.
func metric(t *testing.T, n *nodetest.Node, name string) string {
	t.Helper()
	code, body := n.Do("GET", "/metrics", nil)
	require.Equal(t, http.StatusOK, code)
	var out []string
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, name) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
