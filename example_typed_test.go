package orderly_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/orderlytest"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Email is the payload of the example's queue.
type Email struct {
	To       string `json:"to"`
	Template string `json:"template"`
}

// The typed API: the worker receives Email values and the producer enqueues
// them, both type-checked; payloads travel as JSON unless another codec is
// given (HandleWith, client.NewQueueWith).
func ExampleHandle() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	store, err := redisstore.New(rdb, nil)
	if err != nil {
		panic(err)
	}

	done := make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue: "emails",
			Handler: orderly.Handle(func(ctx context.Context, j orderly.TypedJob[Email]) error {
				for _, e := range j.Payloads { // in score order
					fmt.Printf("%s: %s to %s\n", j.ID, e.Template, e.To)
				}
				close(done)
				return nil // an error would retry this id only
			}),
		}},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	defer node.Stop(ctx)

	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	emails := client.NewQueue[Email](c, "emails")
	if err := emails.Enqueue(ctx, "user-42", Email{To: "ada@example.com", Template: "welcome"}); err != nil {
		panic(err)
	}
	<-done
	// Output:
	// user-42: welcome to ada@example.com
}

// Balance is the typed state of ExampleStateAs.
type Balance struct {
	Total int `json:"total"`
}

// A typed handler on a stateful queue reads and writes its state as a Go
// value; the node commits it with the id's acknowledgement. The batch here
// is built by orderlytest, as a node would hand it over.
func ExampleStateAs() {
	type deposit struct {
		Amount int `json:"amount"`
	}
	h := orderly.Handle(func(_ context.Context, j orderly.TypedJob[deposit]) error {
		bal, _, err := orderly.StateAs(j, orderly.JSON[Balance]{})
		if err != nil {
			return err
		}
		for _, d := range j.Payloads {
			bal.Total += d.Amount
		}
		return orderly.SetStateAs(j, orderly.JSON[Balance]{}, bal)
	})
	b := orderlytest.NewBatch("accounts", orderlytest.Stateful(orderly.Job{ID: "acct-1", Payloads: []orderly.Payload{
		{Data: []byte(`{"amount":5}`)}, {Data: []byte(`{"amount":7}`)},
	}}, []byte(`{"total":30}`), 4))
	if err := h(context.Background(), b); err != nil {
		panic(err)
	}
	fmt.Println(string(orderlytest.OutcomeOf(b.Jobs[0]).State))
	// Output: {"total":42}
}
