package history

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

func TestFromWebhook(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	header := func(d string) http.Header { return http.Header{wire.DeliveryHeader: {d}} }
	job := func(id string, data ...string) wire.Job {
		j := wire.Job{ID: id}
		for i, d := range data {
			j.Payloads = append(j.Payloads, wire.Payload{Data: []byte(d), Score: float64(i)})
		}
		return j
	}
	calls := []webhooktest.Call{
		{Header: header("q/0/1/1"), Request: wire.Request{Jobs: []wire.Job{job("a", `"a1"`, `"a2"`), job("b", `"b1"`)}},
			Answer: webhooktest.Answer{Failed: map[string]string{"b": "no"}}, Start: t0, End: t0.Add(time.Second)},
		{Header: header("q/0/1/2"), Request: wire.Request{Jobs: []wire.Job{job("b", `"b1"`)}},
			Answer: webhooktest.Answer{Status: 500}, Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second)},
		{Header: header("q/0/2/1"), Request: wire.Request{Jobs: []wire.Job{job("b", `"b1"`)}},
			Start: t0.Add(4 * time.Second), End: t0.Add(5 * time.Second), Cut: true},
		{Header: header("q/0/2/2"), Request: wire.Request{Jobs: []wire.Job{job("b", `"b1"`)}}, Start: t0.Add(6 * time.Second)},
	}
	got := FromWebhook(calls)
	require.Equal(t, []Call{
		{ID: "a", Node: "q/0/1/1", Delivery: "q/0/1/1", Start: t0, End: t0.Add(time.Second), Acked: true,
			Payloads: []Payload{{Data: `"a1"`, Score: 0}, {Data: `"a2"`, Score: 1}}},
		{ID: "b", Node: "q/0/1/1", Delivery: "q/0/1/1", Start: t0, End: t0.Add(time.Second), Payloads: []Payload{{Data: `"b1"`}}},
		{ID: "b", Node: "q/0/1/2", Delivery: "q/0/1/2", Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Payloads: []Payload{{Data: `"b1"`}}},
		{ID: "b", Node: "q/0/2/1", Delivery: "q/0/2/1", Start: t0.Add(4 * time.Second), End: t0.Add(5 * time.Second), Payloads: []Payload{{Data: `"b1"`}}},
		{ID: "b", Node: "q/0/2/2", Delivery: "q/0/2/2", Start: t0.Add(6 * time.Second), End: unanswered, Payloads: []Payload{{Data: `"b1"`}}},
	}, got)
	rep := Check(got, map[string][]string{"a": {`"a1"`, `"a2"`}, "b": {`"b1"`}}, nil)
	require.Equal(t, []string{`id "b": payload "\"b1\"" neither acknowledged, discarded nor in the morgue`}, rep.Lost)
}
