package cli

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// finish acknowledges the given jobs of the 1-shard queue mail with
// retain_finished on, with the given results.
func (n *node) finish(results map[string][]byte, jobs ...persistence.NewJob) {
	n.t.Helper()
	n.enqueue("mail", jobs...)
	lease, _, err := n.store.AcquireShard(n.ctx, persistence.ShardRef{Queue: "mail"}, "test", time.Minute)
	require.NoError(n.t, err)
	_, err = n.store.Advance(n.ctx, lease, persistence.AdvanceRequest{Fetch: len(jobs), NextSeq: 1, RetainFinished: time.Hour})
	require.NoError(n.t, err)
	_, err = n.store.Advance(n.ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, RetainFinished: time.Hour, Results: results})
	require.NoError(n.t, err)
	require.NoError(n.t, n.store.ReleaseShard(n.ctx, lease))
}

func TestJobsFinished(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	require.Equal(t, "no finished ids kept in mail (retain_finished keeps them)\n", n.run("jobs", "finished", "--queue", "mail").ok(t))
	n.finish(map[string][]byte{"m-1": []byte(`{"receipt":7}`), "m-2": {0, 0xff}}, newJob("m-1", `1`), newJob("m-2", `2`), newJob("m-3", `3`))

	out := n.run("jobs", "finished", "--queue", "mail").ok(t)
	require.Equal(t, `ID   FINISHED              ATTEMPTS  LAST ERROR  RESULT
m-1  2023-11-14T22:13:20Z  1         -           {"receipt":7}
m-2  2023-11-14T22:13:20Z  1         -           base64:AP8=
m-3  2023-11-14T22:13:20Z  1         -           -
`, out)
	out = n.run("jobs", "finished", "--queue", "mail", "--limit", "2", "--rev").ok(t)
	m := regexp.MustCompile(`(?m)^next: (\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.Contains(t, out, "m-3")
	out = n.run("jobs", "finished", "--queue", "mail", "--limit", "2", "--rev", "--cursor", m[1]).ok(t)
	require.Contains(t, out, "m-1")
	require.NotContains(t, out, "m-3")

	out = n.run("jobs", "finished", "--queue", "mail", "--json").ok(t)
	var page apiv1.FinishedPage
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Len(t, page.Jobs, 3)

	out = squash(n.run("jobs", "get", "--queue", "mail", "m-1").ok(t))
	require.Contains(t, out, "finished: 2023-11-14T22:13:20Z, 1 attempts")
	require.Contains(t, out, `result: {"receipt":7}`)

	out = n.run("jobs", "finished", "--queue", "mail", "--order", "id", "--rev", "--min", "m-2").ok(t)
	require.Regexp(t, `(?s)^ID .*\nm-3 .*\nm-2 .*\n$`, out)

	r := n.run("jobs", "finished", "--queue", "mail", "--limit", "0")
	require.Equal(t, ExitUsage, r.code)
}
