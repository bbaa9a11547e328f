package orderlytest_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/orderlytest"
)

// A stateful queue's handler, tested without a node: it counts an id's
// payloads in its state, sets a reminder timer and emits a notice once the
// count reaches 3.
func ExampleOutcomeOf() {
	handler := func(ctx context.Context, b *orderly.Batch) error {
		for _, j := range b.Jobs {
			n, _ := strconv.Atoi(string(j.State()))
			n += len(j.Payloads)
			j.SetState([]byte(strconv.Itoa(n)))
			j.SetTimer(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
			if n >= 3 {
				j.Emit(orderly.Emit{Queue: "notify", ID: j.ID, Payload: []byte("three")})
			}
		}
		return nil
	}

	job := orderly.Job{ID: "order-7", Payloads: []orderly.Payload{{Data: []byte("a")}, {Data: []byte("b")}}}
	b := orderlytest.NewBatch("orders", orderlytest.Stateful(job, []byte("1"), 4))
	if err := handler(context.Background(), b); err != nil {
		panic(err)
	}
	out := orderlytest.OutcomeOf(b.Jobs[0])
	fmt.Println("state:", string(out.State), "changed:", out.StateChanged)
	fmt.Println("timer:", out.TimerAt.Format(time.RFC3339))
	for _, e := range out.Emits {
		fmt.Println("emit:", e.Queue, e.ID, string(e.Payload))
	}
	// Output:
	// state: 3 changed: true
	// timer: 2026-01-02T00:00:00Z
	// emit: notify order-7 three
}
