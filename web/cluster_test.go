package web_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
)

func TestClusterView(t *testing.T) {
	members := func(context.Context) (string, []apiv1.Member) {
		return "n1", []apiv1.Member{
			{Name: "n1", State: "alive", HTTP: "127.0.0.1:8080", Actor: "127.0.0.1:8090", Queues: []string{"q"}, Version: "0.1.0"},
			{Name: "n2", State: "dead", HTTP: "127.0.0.1:8081"},
		}
	}
	e := newEnv(t, func(c *web.Config) { c.Members = members })
	lease, _, err := e.store.AcquireShard(e.ctx, persistence.ShardRef{Queue: "q", Shard: 1}, "n1", time.Minute)
	require.NoError(t, err)

	a := e.do("GET", "/api/v1/cluster", "")
	require.Equal(t, http.StatusOK, a.status)
	require.JSONEq(t, `{
		"self": "n1",
		"members": [
			{"name":"n1","state":"alive","http":"127.0.0.1:8080","actor":"127.0.0.1:8090","queues":["q"],"version":"0.1.0"},
			{"name":"n2","state":"dead","http":"127.0.0.1:8081","actor":"","queues":[]}
		],
		"shards": [
			{"queue":"q","shard":0,"owner":"","epoch":0},
			{"queue":"q","shard":1,"owner":"n1","epoch":`+strconv.FormatInt(lease.Epoch, 10)+`},
			{"queue":"q","shard":2,"owner":"","epoch":0}
		]
	}`, a.body)
}
