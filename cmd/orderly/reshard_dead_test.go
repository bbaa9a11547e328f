package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// TestReshardDeadReportShard: on a resharded queue, a retries_exhausted_url
// report names the shard that ran the dead jobs (docs/contract.md §3.17:
// deliveries name shards by their generation's numbers), in its body and
// in its Orderly-Delivery "<queue>/<shard>/retries_exhausted", not the
// shard the configured count would give.
func TestReshardDeadReportShard(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		a := webhooktest.Answer{Dead: map[string]string{}}
		for _, j := range c.Request.Jobs {
			a.Dead[j.ID] = "poison"
		}
		return a
	})
	dead := nodetest.NewReceiver(t, func(*webhooktest.Call) webhooktest.Answer { return webhooktest.Answer{} })
	cfg := strings.Replace(webhookConfig(rcv.URL, 5), "timeout: 10s}",
		`timeout: 10s, retries_exhausted_url: "`+dead.URL+`"}`, 1)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg})
	n.WaitReady()

	// 2 shards (0, 1) to 3: the new generation is shards 2 to 4.
	code, out := post(t, n, "/api/v1/queues/orders/reshard", `{"shards": 3}`)
	require.Equal(t, 202, code, "%v", out)
	eventually(t, "the reshard ended", func() bool {
		code, b := n.Do("GET", "/api/v1/queues/orders", nil)
		var q apiv1.Queue
		return code == 200 && json.Unmarshal(b, &q) == nil && q.Reshard == nil && q.Shards == 3
	})

	const ids = 12
	var jobs []string
	for i := range ids {
		jobs = append(jobs, fmt.Sprintf(`{"id": "poison-%d", "payload": %d}`, i, i))
	}
	enqueue(t, n, "["+strings.Join(jobs, ",")+"]")

	reports := func() []webhooktest.Call {
		var got []webhooktest.Call
		for _, c := range dead.Calls() {
			if !c.Cut && c.Answer.Status == 0 {
				got = append(got, c)
			}
		}
		return got
	}
	eventually(t, "every dead id reported", func() bool {
		seen := map[string]bool{}
		for _, c := range reports() {
			for _, j := range c.Request.Jobs {
				seen[j.ID] = true
			}
		}
		return len(seen) == ids
	})

	// The shard each id ran on, as its delivery named it.
	ranOn := map[string]int{}
	for _, c := range rcv.Calls() {
		for _, j := range c.Request.Jobs {
			ranOn[j.ID] = c.Request.Shard
		}
	}
	shards := map[int]bool{}
	for _, c := range reports() {
		sh := c.Request.Shard
		shards[sh] = true
		require.GreaterOrEqual(t, sh, 2, "a shard of the new generation")
		require.LessOrEqual(t, sh, 4, "a shard of the new generation")
		require.Equal(t, fmt.Sprintf("orders/%d/retries_exhausted", sh), c.Header.Get(wire.DeliveryHeader))
		for _, j := range c.Request.Jobs {
			require.Equal(t, ranOn[j.ID], sh, "the report of %s names the shard that ran it", j.ID)
		}
	}
	require.Greater(t, len(shards), 1, "the ids spread over the new shards")
}
