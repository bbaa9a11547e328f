package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web"
)

// http_base_path: '/' first, no trailing '/', and errors that say so; the
// rule is the HTTP server's.
func TestBasePath(t *testing.T) {
	t.Parallel()
	cfg, err := Load([]string{"--http-base-path", "/orderly"}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, "/orderly", cfg.Node.HTTPBasePath)
	cfg, err = Load(nil, []string{"ORDERLY_HTTP_BASE_PATH=/tools/orderly-1"}, nil)
	require.NoError(t, err)
	require.Equal(t, "/tools/orderly-1", cfg.Node.HTTPBasePath)
	cfg, err = Load(nil, nil, nil)
	require.NoError(t, err)
	require.Empty(t, cfg.Node.HTTPBasePath, "the root by default")

	for value, msg := range map[string]string{
		"orderly":     "must start with '/'",
		"/orderly/":   "must not end with '/'",
		"/":           "must not end with '/'",
		"//orderly":   "empty",
		"/a/../b":     "'..'",
		"/or derly":   "only letters",
		"/orderly?x":  "only letters",
		"/%6Frderly":  "only letters",
		"/orderly#me": "only letters",
	} {
		_, err := Load([]string{"--http-base-path", value}, nil, nil)
		require.ErrorContains(t, err, msg, value)
		require.ErrorContains(t, err, "--http-base-path", value)
		require.Error(t, web.ValidateBasePath(value), "%s: the server refuses it too", value)
	}
	for _, ok := range []string{"", "/orderly", "/a/b.c/d_e~f-g"} {
		require.NoError(t, checkBasePath(ok))
		require.NoError(t, web.ValidateBasePath(ok))
	}
}

// In the file, the error names the key.
func TestBasePathInFile(t *testing.T) {
	t.Parallel()
	_, _, err := loadFile(t, "node: {http_base_path: orderly/}\n", nil)
	require.ErrorContains(t, err, "http_base_path")
	require.ErrorContains(t, err, "must start with '/'")
}
