package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook"
)

// A receiver written in Go decodes each delivery into a webhook.Request
// and answers with a webhook.Answer that fails some ids; the other ids are
// acknowledged. An empty 2xx answer acknowledges every id; any other status
// fails the whole delivery, which is retried.
func ExampleRequest() {
	receive := func(w http.ResponseWriter, r *http.Request) {
		var req webhook.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest) // fails the delivery
			return
		}
		failed := map[string]string{}
		for _, j := range req.Jobs {
			// Data holds the stored bytes, whether they came as "payload"
			// (JSON) or as "payload_base64" (anything else).
			for _, p := range j.Payloads { // in score order
				fmt.Printf("%s (retry_count %d): %s\n", j.ID, j.RetryCount, p.Data)
			}
			if j.ID == "order-2" {
				failed[j.ID] = "card declined"
			}
		}
		if len(failed) == 0 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(webhook.Answer{Failed: failed})
	}
	srv := httptest.NewServer(http.HandlerFunc(receive))
	defer srv.Close()

	// The node's side: a queue whose handler is the receiver's URL.
	handle, err := webhook.New(&webhook.Config{URL: srv.URL, Client: srv.Client()})
	if err != nil {
		panic(err)
	}
	err = handle(context.Background(), &orderly.Batch{Queue: "orders", Delivery: "orders/0/1/1", Jobs: []orderly.Job{
		{ID: "order-1", RetryCount: -1, Payloads: []orderly.Payload{{Data: []byte(`{"sku":"A-1"}`), Score: 1}}},
		{ID: "order-2", RetryCount: 3, Payloads: []orderly.Payload{{Data: []byte("gift wrap"), Score: 2}}},
	}})
	pf, ok := orderly.AsPartialFailure(err)
	fmt.Println("partial failure:", ok, pf.Failed["order-2"])
	// Output:
	// order-1 (retry_count -1): {"sku":"A-1"}
	// order-2 (retry_count 3): gift wrap
	// partial failure: true card declined
}
