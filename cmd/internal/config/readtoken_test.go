package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHTTPReadToken(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, "node: {http_token: full, http_read_token: ro}", nil)
	require.NoError(t, err)
	require.Equal(t, "ro", cfg.Node.HTTPReadToken)

	for _, tc := range []struct {
		name, file string
		env        []string
		want       string
	}{
		{"alone", "node: {http_read_token: ro}", nil,
			"node.http_read_token: needs node.http_token (without it every request may change state)"},
		{"same as the full token", "", []string{"ORDERLY_HTTP_TOKEN=t", "ORDERLY_HTTP_READ_TOKEN=t"},
			"node.http_read_token: must differ from node.http_token"},
		{"with a space", "node: {http_token: full, http_read_token: 'a b'}", nil,
			"node.http_read_token: must not contain spaces or control characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := loadFile(t, tc.file, tc.env)
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "a b")
		})
	}
}
