package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook"
)

// A receiver fails one id of a batch of two; the handler returns a partial
// failure of that id.
func Example() {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Queue string `json:"queue"`
			Shard int    `json:"shard"`
			Jobs  []struct {
				ID       string            `json:"id"`
				Payloads []json.RawMessage `json:"payloads"`
			} `json:"jobs"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Println("delivery:", r.Header.Get("Orderly-Delivery"))
		fmt.Println("queue:", req.Queue, "shard:", req.Shard)
		for _, j := range req.Jobs {
			for _, p := range j.Payloads {
				fmt.Printf("job %s: %s\n", j.ID, p)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"failed": {"order-2": "card declined"}}`)
	}))
	defer receiver.Close()

	handle, err := webhook.New(&webhook.Config{
		URL:     receiver.URL + "/hooks/orders",
		Timeout: 5 * time.Second,
		Client:  receiver.Client(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	err = handle(context.Background(), &orderly.Batch{
		Queue:    "orders",
		Shard:    0,
		Delivery: "orders/0/1/1",
		Jobs: []orderly.Job{
			{ID: "order-1", RetryCount: -1, PerformAt: time.Unix(1767225600, 0),
				Payloads: []orderly.Payload{{Data: []byte(`{"sku": "A-1"}`), Score: 1}}},
			{ID: "order-2", RetryCount: 0, PerformAt: time.Unix(1767225601, 0),
				Payloads: []orderly.Payload{{Data: []byte{0xca, 0xfe}, Score: 2}}},
		},
	})
	fmt.Println("handler:", err)
	// Output:
	// delivery: orders/0/1/1
	// queue: orders shard: 0
	// job order-1: {"payload":{"sku": "A-1"},"score":1}
	// job order-2: {"payload_base64":"yv4=","score":2}
	// handler: 1 of the batch's ids failed: "order-2": card declined
}
