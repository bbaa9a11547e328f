package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// counter is the state each id of TestChaosCounter keeps: N counts the
// payloads its handler calls committed plus the external additions, Ext
// the external additions alone.
type counter struct {
	N   int64 `json:"n"`
	Ext int64 `json:"ext"`
}

// externalAdd is what one external compare-and-set write adds to a counter.
const externalAdd = 1000

// casWrite is one successful external compare-and-set: it replaced
// version Expected of id.
type casWrite struct {
	ID       string
	Expected int64
}

// TestChaosCounter checks entity state end to end (docs/contract.md §11) on
// three node processes sharing one Redis: a stateful queue whose webhook
// receiver keeps a counter in each id's state, adding one per payload it is
// given, while, round after round, a node is SIGKILLed and restarted, another
// is frozen with SIGSTOP past lease_ttl and then resumed, and external
// compare-and-set writes (HTTP PUT of the state with the version just read,
// retried on 409) add 1000 to random counters all along. The receiver is
// slow enough that external writes land while calls of the same id run:
// those calls' commits must fail with a conflict and the ids come back with
// the new state.
//
// Each call also emits every payload it counts to an audit queue (the
// answer's "emit", on behalf of the payload's id), committed with the id's
// acknowledgement through the shard's outbox.
//
// At the end, for every id, the counter equals the number of distinct
// payloads acknowledged plus the external additions that succeeded:
// a state committed without its acknowledgement, an acknowledgement
// committed twice or an external write lost would all show. The audit
// queue received every processed payload (at least once) and nothing else:
// the emits of a call that did not commit are dropped with it. The recorded
// history must also show no overlap and no disorder. ORDERLY_COUNTER_ROUNDS
// sets the rounds (default 2; make soak-chaos runs more), ORDERLY_CHAOS_SEED
// reproduces a run.
func TestChaosCounter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("chaos test: skipped with -short")
	}
	rounds := envRounds(t, "ORDERLY_COUNTER_ROUNDS", 2)
	rng := newChaosRand(t)
	rnd := rng.intN

	var bmu sync.Mutex // guards badState
	var badState []string
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		if c.Request.Queue == "audit" {
			return webhooktest.Answer{} // every emit that arrives is acknowledged
		}
		a := webhooktest.Answer{Delay: time.Duration(rnd(120)) * time.Millisecond,
			Failed: map[string]string{}, State: map[string]json.RawMessage{}}
		for _, j := range c.Request.Jobs {
			if rnd(30) == 0 {
				a.Failed[j.ID] = "random failure"
				continue
			}
			var st counter
			if len(j.State) > 0 {
				if err := json.Unmarshal(j.State, &st); err != nil {
					bmu.Lock()
					badState = append(badState, fmt.Sprintf("id %q version %d: %q: %v", j.ID, j.Version, j.State, err))
					bmu.Unlock()
				}
			}
			st.N += int64(len(j.Payloads))
			a.State[j.ID], _ = json.Marshal(st) // two integers always marshal
			// Each payload is audited: emitted, as it is, to the audit
			// queue under the same id (equal payloads merge there).
			for _, p := range j.Payloads {
				a.Emit = append(a.Emit, wire.Emit{From: j.ID, Queue: "audit", ID: j.ID, Payload: json.RawMessage(p.Data)})
			}
		}
		return a
	})
	cfg := fmt.Sprintf(`
queues:
  - name: orders
    shards: 8
    batch_size: 4
    max_retry_count: 1000
    state: true
    retry: {policy: linear, base: 20ms}
    handler: {type: http, url: %q, timeout: 2s}
  - name: audit
    shards: 4
    batch_size: 10
    handler: {type: http, url: %q, timeout: 2s}
`, rcv.URL, rcv.URL)

	tl := newTimeline(t)
	note := tl.note
	opts, nodes := startTrio(t, "s", nodetest.Options{Redis: "redis://" + srv.Addr() + "/0", Config: cfg}, nil)
	note("3 nodes ready")

	store := directStore(t, srv.Addr())
	producer := produceOrders(t, store)

	// The external writer sends its compare-and-set writes to nodes that
	// are up; a fault takes a node out of its choice (waiting for the
	// write in flight) before it hits, so that every answer is known.
	var (
		upMu    sync.RWMutex // guards up and nodes; a write holds it for reading
		up      = []bool{true, true, true}
		wmu     sync.Mutex // guards written, added, retried, unknown
		written []casWrite
		added   = map[string]int64{}
		retried int
		unknown []string
	)
	writeOnce := func() {
		id := "order-" + strconv.Itoa(rnd(40))
		upMu.RLock()
		defer upMu.RUnlock()
		var live []*nodetest.Node
		for i, n := range nodes {
			if up[i] {
				live = append(live, n)
			}
		}
		if len(live) == 0 {
			return
		}
		for attempt := 0; attempt < 20; attempt++ {
			n := live[rnd(len(live))]
			code, body := n.Do(http.MethodGet, "/api/v1/queues/orders/state/"+id, nil)
			if code != http.StatusOK {
				wmu.Lock()
				unknown = append(unknown, fmt.Sprintf("GET state of %s from %s: %d %s", id, n.Name, code, body))
				wmu.Unlock()
				return
			}
			var cur struct {
				State   *counter `json:"state"`
				Version int64    `json:"version"`
			}
			if err := json.Unmarshal(body, &cur); err != nil {
				wmu.Lock()
				unknown = append(unknown, fmt.Sprintf("GET state of %s from %s: %v: %s", id, n.Name, err, body))
				wmu.Unlock()
				return
			}
			st := counter{}
			if cur.State != nil {
				st = *cur.State
			}
			st.N += externalAdd
			st.Ext += externalAdd
			put, _ := json.Marshal(map[string]any{"state": st, "version": cur.Version})
			code, body = n.Do(http.MethodPut, "/api/v1/queues/orders/state/"+id, put)
			switch code {
			case http.StatusOK:
				wmu.Lock()
				written = append(written, casWrite{ID: id, Expected: cur.Version})
				added[id] += externalAdd
				wmu.Unlock()
				return
			case http.StatusConflict:
				wmu.Lock()
				retried++
				wmu.Unlock()
			default:
				wmu.Lock()
				unknown = append(unknown, fmt.Sprintf("PUT state of %s to %s: %d %s", id, n.Name, code, body))
				wmu.Unlock()
				return
			}
		}
	}
	writerCtx, stopWriter := context.WithCancel(context.Background())
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for writerCtx.Err() == nil {
			writeOnce()
			select {
			case <-writerCtx.Done():
			case <-time.After(time.Duration(20+rnd(40)) * time.Millisecond):
			}
		}
	}()
	defer func() { stopWriter(); <-writerDone }()
	setUp := func(i int, v bool) {
		upMu.Lock()
		up[i] = v
		upMu.Unlock()
	}

	time.Sleep(2 * time.Second)
	for r := 0; r < rounds; r++ {
		k := rnd(len(nodes))
		setUp(k, false)
		note("round %d: SIGKILL %s", r+1, opts[k].Name)
		nodes[k].Kill()
		time.Sleep(time.Duration(500+rnd(1000)) * time.Millisecond)
		n := nodetest.Start(t, opts[k])
		upMu.Lock()
		nodes[k], up[k] = n, true
		upMu.Unlock()
		note("round %d: %s restarted", r+1, opts[k].Name)
		time.Sleep(time.Duration(1000+rnd(1000)) * time.Millisecond)

		p := rnd(len(nodes))
		setUp(p, false)
		pause := time.Duration(1500+rnd(1000)) * time.Millisecond // lease_ttl is 1 s
		note("round %d: SIGSTOP %s for %v", r+1, opts[p].Name, pause)
		nodes[p].Signal(syscall.SIGSTOP)
		time.Sleep(pause)
		nodes[p].Signal(syscall.SIGCONT)
		setUp(p, true)
		note("round %d: SIGCONT %s", r+1, opts[p].Name)
		time.Sleep(time.Duration(1000+rnd(1000)) * time.Millisecond)
	}
	producer.Stop()
	stopWriter()
	<-writerDone
	note("producer and external writer stopped")

	for _, n := range nodes {
		n.WaitReady()
	}
	waitDrained(t, store, rcv, "orders", 60*time.Second, tl)
	orderCalls, auditCalls := splitCalls(rcv.Calls())

	require.Empty(t, morgueOf(t, store, "orders"), "nothing reaches the morgue (max_retry_count 1000)")
	wmu.Lock()
	defer wmu.Unlock()
	require.Empty(t, unknown, "every external write got a clear answer")
	bmu.Lock()
	require.Empty(t, badState, "every state handed over is a counter")
	bmu.Unlock()

	// A call given a version that an external write replaced cannot have
	// committed (the write needed that version to be current): the
	// receiver acknowledged it, the node's commit met a conflict and the
	// id came back, under the same lease.
	replaced := map[casWrite]bool{}
	for _, w := range written {
		replaced[w] = true
	}
	calls := history.FromWebhook(orderCalls)
	conflicted := 0
	for i := range calls {
		if calls[i].Acked && replaced[casWrite{ID: calls[i].ID, Expected: calls[i].Version}] {
			calls[i].Acked = false
			conflicted++
		}
	}
	rep := history.Check(calls, producer.Enqueued(), nil)
	processed := map[string]map[string]bool{} // id -> distinct payloads acknowledged
	for _, c := range calls {
		if !c.Acked {
			continue
		}
		if processed[c.ID] == nil {
			processed[c.ID] = map[string]bool{}
		}
		for _, p := range c.Payloads {
			processed[c.ID][p.Data] = true
		}
	}
	// Every payload processed was emitted to the audit queue with its
	// commit, and only those: the emits of a call that did not commit
	// (failed, conflicting, cut by a lost lease) are dropped with it. The
	// relay may repeat an emit (at least once), and equal payloads merge.
	audited := func() (got map[string]map[string]bool, acks int) {
		got = map[string]map[string]bool{}
		for _, c := range history.FromWebhook(auditCalls) {
			if !c.Acked {
				continue
			}
			if got[c.ID] == nil {
				got[c.ID] = map[string]bool{}
			}
			for _, p := range c.Payloads {
				got[c.ID][p.Data] = true
				acks++
			}
		}
		return got, acks
	}
	missing := func(got map[string]map[string]bool) (n int) {
		for id, ps := range processed {
			for p := range ps {
				if !got[id][p] {
					n++
				}
			}
		}
		return n
	}
	require.Eventually(t, func() bool {
		_, auditCalls = splitCalls(rcv.Calls())
		got, _ := audited()
		st, err := store.Stats(context.Background(), "audit")
		return missing(got) == 0 && err == nil && st[0].Length == 0 && st[0].Busy == 0 && rcv.Active() == 0
	}, 60*time.Second, 50*time.Millisecond, "every processed payload reaches the audit queue")
	got, auditAcks := audited()
	var extra []string
	for id, ps := range got {
		for p := range ps {
			if !processed[id][p] {
				extra = append(extra, fmt.Sprintf("%s: %s", id, p))
			}
		}
	}
	require.Empty(t, extra, "audited payloads that no committed call emitted")
	note("audit complete")

	var wrong []string
	ids := 0
	for i := 0; i < 40; i++ {
		id := "order-" + strconv.Itoa(i)
		st, err := store.GetState(context.Background(), "orders", id)
		require.NoError(t, err)
		var got counter
		if len(st.Data) > 0 {
			require.NoError(t, json.Unmarshal(st.Data, &got), "state of %s: %q", id, st.Data)
		}
		want := counter{N: int64(len(processed[id])) + added[id], Ext: added[id]}
		if got != want {
			wrong = append(wrong, fmt.Sprintf("%s: counter %+v (version %d), want %+v (%d payloads, %d external writes)",
				id, got, st.Version, want, len(processed[id]), added[id]/externalAdd))
		}
		if st.Version != 0 {
			ids++
		}
	}
	t.Logf("seed %d: %d rounds; %d ids with state, %d external writes (%d retried on 409), %d acknowledged calls met a conflict; %d emits audited (%d acknowledged, repeats included); %s\ntimeline:\n%s",
		rng.seed, rounds, ids, len(written), retried, conflicted, rep.Acked, auditAcks, rep.String(), tl)
	require.Empty(t, wrong, "seed %d: every counter is its payloads plus its external additions", rng.seed)
	require.True(t, rep.OK(), "seed %d: %s", rng.seed, rep.String())
	require.Greater(t, rep.Acked, 0, "the load was handled")
	require.NotEmpty(t, written, "external writes landed")
}

// splitCalls separates the receiver's calls of the orders queue from those
// of the audit queue.
func splitCalls(calls []webhooktest.Call) (orders, audit []webhooktest.Call) {
	for _, c := range calls {
		if c.Request.Queue == "audit" {
			audit = append(audit, c)
		} else {
			orders = append(orders, c)
		}
	}
	return orders, audit
}
