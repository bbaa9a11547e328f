package redisurl_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files.
type testPKI struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "orderly test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return p
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"redis.test"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
		require.NoError(t, err)
		kd, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kd)
	}
	p := testPKI{ca: write("ca.pem", "CERTIFICATE", caDER)}
	p.serverCert, p.serverKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return p
}

// TestTLSServer connects through rediss:// URLs to a redis-server that
// serves TLS with a test certificate and requires client certificates.
func TestTLSServer(t *testing.T) {
	if redisserver.Binary() == "" {
		t.Skip("redis-server not installed")
	}
	pki := newTestPKI(t)
	port, err := redisserver.FreePort()
	require.NoError(t, err)
	srv, err := redisserver.Start(redisserver.Options{Args: []string{
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", pki.serverCert, "--tls-key-file", pki.serverKey,
		"--tls-ca-cert-file", pki.ca, "--tls-auth-clients", "yes",
	}})
	if err != nil && (strings.Contains(err.Error(), "tls-port") || strings.Contains(err.Error(), "TLS")) {
		t.Skipf("this redis-server was built without TLS support (BUILD_TLS=yes): %v", err)
	}
	require.NoError(t, err)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := "rediss://127.0.0.1:" + strconv.Itoa(port) + "/0?dial_timeout=5s&max_retries=-1"
	good := base + "&tls_ca_file=" + pki.ca + "&tls_cert_file=" + pki.clientCert + "&tls_key_file=" + pki.clientKey

	rdb, err := redisurl.Open(good)
	require.NoError(t, err)
	defer rdb.Close()
	require.NoError(t, rdb.Ping(ctx).Err())
	s, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 2}))
	require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{{ID: "a", Payload: []byte("x")}}))
	_, err = s.GetJob(ctx, "q", "a")
	require.NoError(t, err)

	for _, tc := range []struct{ name, url, want string }{
		{"named server", good + "&tls_server_name=redis.test", ""},
		{"unknown CA", base + "&tls_cert_file=" + pki.clientCert + "&tls_key_file=" + pki.clientKey, "certificate"},
		{"wrong server name", good + "&tls_server_name=other.test", "certificate"},
		{"insecure skip verify", base + "&tls_insecure_skip_verify=true&tls_cert_file=" + pki.clientCert + "&tls_key_file=" + pki.clientKey, ""},
		{"no client certificate", base + "&tls_ca_file=" + pki.ca, "EOF|reset|certificate|broken pipe"},
	} {
		c, err := redisurl.Open(tc.url)
		require.NoError(t, err, tc.name)
		err = c.Ping(ctx).Err()
		c.Close()
		if tc.want == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.Error(t, err, tc.name)
		ok := false
		for _, w := range strings.Split(tc.want, "|") {
			ok = ok || strings.Contains(err.Error(), w)
		}
		require.True(t, ok, "%s: %v", tc.name, err)
	}
}
