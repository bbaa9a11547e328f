package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// A receiver fails one id of a batch of two; the sender's handler returns
// a partial failure of that id. The receiver imports only package wire.
func Example() {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req wire.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Println("delivery:", r.Header.Get(wire.DeliveryHeader))
		fmt.Println("queue:", req.Queue, "shard:", req.Shard)
		for _, j := range req.Jobs {
			for _, p := range j.Payloads {
				fmt.Printf("job %s: %q\n", j.ID, p.Data)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(wire.Answer{Failed: map[string]string{"order-2": "card declined"}})
	}))
	defer receiver.Close()

	sender, err := webhook.New(&webhook.Config{URL: receiver.URL + "/hooks/orders", Timeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sender.Close() // once nothing calls Handle any more

	err = sender.Handle(context.Background(), &orderly.Batch{
		Queue:    "orders",
		Shard:    0,
		Delivery: "orders/0/1/1",
		Jobs: []orderly.Job{
			{ID: "order-1", RetryCount: -1, PerformAt: time.Unix(1767225600, 0),
				Payloads: []orderly.Payload{{Data: []byte(`{"sku":"A-1"}`), Score: 1}}},
			{ID: "order-2", RetryCount: 0, PerformAt: time.Unix(1767225601, 0),
				Payloads: []orderly.Payload{{Data: []byte{0xca, 0xfe}, Score: 2}}},
		},
	})
	fmt.Println("handler:", err)
	// Output:
	// delivery: orders/0/1/1
	// queue: orders shard: 0
	// job order-1: "{\"sku\":\"A-1\"}"
	// job order-2: "\xca\xfe"
	// handler: 1 of the batch's ids failed: "order-2": card declined
}
