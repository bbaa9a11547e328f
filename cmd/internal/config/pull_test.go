package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPullHandler(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, "queues: [{name: a, timeout: 2m, handler: {type: pull, lease: 45s, worker_token: 'w-secret'}}]", nil)
	require.NoError(t, err)
	require.Equal(t, HandlerConfig{Type: HandlerPull, Lease: 45 * time.Second, WorkerToken: "w-secret"}, cfg.Queues[0].Handler)
	require.NoError(t, cfg.Validate())
	require.Equal(t, redactedMark, cfg.Redacted().Queues[0].Handler.WorkerToken)

	_, _, err = loadFile(t, "queues: [{name: a, handler: {type: pull}}]", nil)
	require.NoError(t, err)

	// Dead jobs are reported as a webhook queue's are, signed.
	cfg, _, err = loadFile(t, "queues: [{name: a, handler: {type: pull, retries_exhausted_url: 'http://127.0.0.1:9/dead', secret: s, headers: {X-Team: a}}}]", nil)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:9/dead", cfg.Queues[0].Handler.RetriesExhaustedURL)
	require.Equal(t, "s", cfg.Queues[0].Handler.Secret)
}

func TestPullHandlerErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, want string }{
		{"url", "queues: [{name: a, handler: {type: pull, url: 'http://h/p'}}]", "queues[0].handler.url: not allowed for handler type pull"},
		{"timeout", "queues: [{name: a, handler: {type: pull, timeout: 5s}}]", "queues[0].handler.timeout: not allowed for handler type pull"},
		{"secret without a report URL", "queues: [{name: a, handler: {type: pull, secret: s}}]", "queues[0].handler.secret: for handler type pull, only with handler.retries_exhausted_url"},
		{"bad report URL", "queues: [{name: a, handler: {type: pull, retries_exhausted_url: 'ftp://h/x'}}]", "queues[0].handler.retries_exhausted_url:"},
		{"lease over half the timeout", "queues: [{name: a, timeout: 10s, handler: {type: pull, lease: 6s}}]", "queues[0].handler.lease: must be at most half the queue's timeout"},
		{"lease on log", "queues: [{name: a, handler: {type: log, lease: 6s}}]", "queues[0].handler.lease: only allowed for handler type pull"},
		{"token on noop", "queues: [{name: a, handler: {type: noop, worker_token: x}}]", "queues[0].handler.worker_token: only allowed for handler type pull"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := loadFile(t, tc.file, nil)
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
