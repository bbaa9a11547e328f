package redisurl_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence/redisurl"
)

func TestParseForms(t *testing.T) {
	u, err := redisurl.Parse("redis://alice:s3cret@db.example:6380/2?dial_timeout=3&pool_size=7")
	require.NoError(t, err)
	require.Equal(t, redisurl.Standalone, u.Kind)
	require.Equal(t, "db.example:6380", u.Options.Addr)
	require.Equal(t, 2, u.Options.DB)
	require.Equal(t, "alice", u.Options.Username)
	require.Equal(t, "s3cret", u.Options.Password)
	require.Equal(t, 3*time.Second, u.Options.DialTimeout)
	require.Equal(t, 7, u.Options.PoolSize)
	require.Nil(t, u.Options.TLSConfig)
	require.Equal(t, []string{"db.example:6380"}, u.Addrs())

	u, err = redisurl.Parse("redis://h")
	require.NoError(t, err)
	require.Equal(t, "h:6379", u.Options.Addr)

	u, err = redisurl.Parse("rediss://h:6380/0")
	require.NoError(t, err)
	require.NotNil(t, u.Options.TLSConfig)
	require.Equal(t, "h", u.Options.TLSConfig.ServerName)

	u, err = redisurl.Parse("unix:///run/redis.sock?db=1")
	require.NoError(t, err)
	require.Equal(t, "unix", u.Options.Network)
	require.Equal(t, "/run/redis.sock", u.Options.Addr)
	require.Equal(t, 1, u.Options.DB)

	u, err = redisurl.Parse("redis+cluster://bob:pw@a:7000,b:7001,c?read_timeout=2s&max_redirects=5")
	require.NoError(t, err)
	require.Equal(t, redisurl.Cluster, u.Kind)
	require.Equal(t, []string{"a:7000", "b:7001", "c:6379"}, u.ClusterOptions.Addrs)
	require.Equal(t, "bob", u.ClusterOptions.Username)
	require.Equal(t, "pw", u.ClusterOptions.Password)
	require.Equal(t, 2*time.Second, u.ClusterOptions.ReadTimeout)
	require.Equal(t, 5, u.ClusterOptions.MaxRedirects)
	require.Nil(t, u.ClusterOptions.TLSConfig)

	u, err = redisurl.Parse("rediss+cluster://a:7000,b:7001?tls_server_name=redis.internal")
	require.NoError(t, err)
	require.Equal(t, "redis.internal", u.ClusterOptions.TLSConfig.ServerName)

	u, err = redisurl.Parse("redis+sentinel://:mpw@s1:26380,s2,s3:26381/mymaster/3?sentinel_password=spw&dial_timeout=1s")
	require.NoError(t, err)
	require.Equal(t, redisurl.Sentinel, u.Kind)
	f := u.FailoverOptions
	require.Equal(t, "mymaster", f.MasterName)
	require.Equal(t, []string{"s1:26380", "s2:26379", "s3:26381"}, f.SentinelAddrs)
	require.Equal(t, 3, f.DB)
	require.Equal(t, "mpw", f.Password)
	require.Equal(t, "spw", f.SentinelPassword)
	require.Equal(t, time.Second, f.DialTimeout)
	require.Nil(t, f.TLSConfig)

	u, err = redisurl.Parse("rediss+sentinel://s1/m?tls_insecure_skip_verify=true")
	require.NoError(t, err)
	require.Equal(t, "m", u.FailoverOptions.MasterName)
	require.Equal(t, 0, u.FailoverOptions.DB)
	require.True(t, u.FailoverOptions.TLSConfig.InsecureSkipVerify)
}

func TestParseClientKinds(t *testing.T) {
	for raw, want := range map[string]any{
		"redis://h:1/0":             &redis.Client{},
		"redis+cluster://h:1,h:2":   &redis.ClusterClient{},
		"redis+sentinel://h:1/main": &redis.Client{},
	} {
		c, err := redisurl.Open(raw)
		require.NoError(t, err, raw)
		require.IsType(t, want, c, raw)
		c.Close()
	}
}

func TestParseTLSFiles(t *testing.T) {
	dir := t.TempDir()
	pki := newTestPKI(t)
	ca, cert, key := pki.ca, pki.clientCert, pki.clientKey
	u, err := redisurl.Parse("rediss://h:1/0?tls_ca_file=" + ca + "&tls_cert_file=" + cert + "&tls_key_file=" + key)
	require.NoError(t, err)
	require.NotNil(t, u.Options.TLSConfig.RootCAs)
	require.Len(t, u.Options.TLSConfig.Certificates, 1)
	require.False(t, u.Options.TLSConfig.InsecureSkipVerify)

	bad := filepath.Join(dir, "empty.pem")
	require.NoError(t, os.WriteFile(bad, []byte("nothing"), 0o600))
	_, err = redisurl.Parse("rediss://h:1/0?tls_ca_file=" + bad)
	require.ErrorContains(t, err, "holds no PEM certificate")
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"127.0.0.1:6379", "has no scheme"},
		{"http://h:1", `scheme "http" is not one of`},
		{"redis:///0", "has no host"},
		{"redis://h:70000", "port must be a number"},
		{"redis://h/x", "the path must be a database number"},
		{"redis://h/0?db=x", "invalid database number"},
		{"unix://", "has no socket path"},
		{"redis://h:1/0?bogus=1", "unknown parameter bogus"},
		{"redis+cluster://h:1?frobnicate=2", "unknown parameter frobnicate"},
		{"redis+sentinel://h:1/m?nope=2", "unknown parameter nope"},
		{"redis://h:1/0?addr=x:1", "unknown parameter addr"},
		{"redis://h:1/0?password=x", "unknown parameter password"},
		{"redis://h:1/0?sentinel_password=x", "unknown parameter sentinel_password"},
		{"redis://h:1,h:2/0", "several hosts"},
		{"redis+cluster://h:1,,h:2", "empty host"},
		{"redis+cluster://h:1/3", "has no path"},
		{"redis+sentinel://h:1", "names the master"},
		{"redis+sentinel://h:1/m/x", "database after the master"},
		{"redis+sentinel://h:1/m/0/9", "names the master"},
		{"redis://h:1/0?tls_ca_file=/x", "needs a TLS scheme"},
		{"rediss://h:1/0?tls_insecure_skip_verify=maybe", "true or false"},
		{"rediss://h:1/0?tls_cert_file=/x", "go together"},
		{"rediss://h:1/0?tls_ca_file=/does/not/exist", "tls_ca_file"},
		{"redis://h:1/0?dial_timeout=soon", "dial_timeout"},
	} {
		_, err := redisurl.Parse(tc.url)
		require.Error(t, err, tc.url)
		require.True(t, errors.Is(err, redisurl.ErrInvalid), tc.url)
		require.Contains(t, err.Error(), tc.want, tc.url)
	}
}

// TestPasswordsNeverShown checks errors and Redacted of URLs with passwords.
func TestPasswordsNeverShown(t *testing.T) {
	for _, raw := range []string{
		"redis://u:TOPSECRET@h:1/0?bogus=1",
		"redis://u:TOPSECRET@h:1/x",
		"redis://u:TOPSECRET@h:1/0?dial_timeout=soon",
		"redis://u:TOPSECRET@h :1/0",
		"redis+cluster://u:TOPSECRET@h:1,h:2?bad=1",
		"redis+sentinel://u:TOPSECRET@h:1/m?sentinel_password=TOPSECRET&bad=1",
		"rediss://u:TOPSECRET@h:1/0?tls_ca_file=/nope",
	} {
		_, err := redisurl.Parse(raw)
		require.Error(t, err, raw)
		require.NotContains(t, err.Error(), "TOPSECRET", raw)
		require.NotContains(t, redisurl.Redact(raw), "TOPSECRET", raw)
	}
	u, err := redisurl.Parse("redis+sentinel://u:TOPSECRET@h:1/m?sentinel_password=TOPSECRET")
	require.NoError(t, err)
	require.False(t, strings.Contains(u.Redacted(), "TOPSECRET"))
	require.Equal(t, u.Redacted(), u.String())
	require.Contains(t, u.Redacted(), "u:xxxxx@h:1")
}

func TestRedact(t *testing.T) {
	require.Equal(t, "redis+cluster://u:xxxxx@a:1,b", redisurl.Redact("redis+cluster://u:pw@a:1,b"))
	require.Equal(t, "redis://h:1/0", redisurl.Redact("redis://h:1/0"))
	require.NotContains(t, redisurl.Redact("redis://u:pw@h :1/0"), "pw")
}
