package shard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// dropExpired takes out what expired at the batch's fetch time, keeps the
// order of the rest, drops an id left with nothing unless its timer
// brought it, and names what it took by position (docs/contract.md §3.15).
func TestDropExpired(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 0)
	// p is a payload expiring exp after the fetch; never without exp.
	p := func(d string, exp ...time.Duration) persistence.Payload {
		pl := persistence.Payload{Data: []byte(d)}
		if len(exp) > 0 {
			pl.ExpiresAt = at.Add(exp[0])
		}
		return pl
	}
	b := &persistence.Batch{FetchedAt: at, Jobs: []persistence.Job{
		{ID: "live", Payloads: []persistence.Payload{p("l1"), p("l2", time.Second)}},
		// m3 expires at the fetch's instant (expired), m4 1 ns after (live).
		{ID: "mix", Payloads: []persistence.Payload{p("m1", -time.Second), p("m2"), p("m3", 0), p("m4", 1)}},
		{ID: "gone", Payloads: []persistence.Payload{p("g1", -time.Hour)}},
		{ID: "timer", Timer: true, Payloads: []persistence.Payload{p("t1", -1)}},
		{ID: "last", Payloads: []persistence.Payload{p("z1")}},
	}}
	ex := dropExpired(b)
	require.Equal(t, []persistence.Expired{
		{ID: "mix", Payloads: []int{0, 2}}, {ID: "gone", Payloads: []int{0}}, {ID: "timer", Payloads: []int{0}},
	}, ex)
	var got []string
	for _, j := range b.Jobs {
		s := j.ID + ":"
		for _, pl := range j.Payloads {
			s += string(pl.Data)
		}
		got = append(got, s)
	}
	require.Equal(t, []string{"live:l1l2", "mix:m2m4", "timer:", "last:z1"}, got)
	require.Equal(t, 4, expiredPayloads(ex))

	none := &persistence.Batch{FetchedAt: at, Jobs: []persistence.Job{{ID: "a", Payloads: []persistence.Payload{p("a", time.Second)}}}}
	require.Nil(t, dropExpired(none))
	require.Len(t, none.Jobs, 1)
}
