package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// With a secret (handler.secret in the configuration file) the sender
// signs each request; the receiver, which imports only package wire,
// checks the signature with wire.VerifyRequest before trusting the body.
func ExampleConfig_secret() {
	secret := []byte("s3cr3t")
	receive := func(w http.ResponseWriter, r *http.Request) {
		if _, err := wire.VerifyRequest(r, secret, 5*time.Minute, 0); err != nil {
			if errors.Is(err, wire.ErrNoSignature) || errors.Is(err, wire.ErrBadSignature) {
				fmt.Println("rejected: not signed with our secret")
			}
			http.Error(w, "bad signature", http.StatusUnauthorized) // fails the delivery
			return
		}
		var req wire.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Println("verified delivery of", req.Jobs[0].ID)
		w.WriteHeader(http.StatusNoContent)
	}
	srv := httptest.NewServer(http.HandlerFunc(receive))
	defer srv.Close()

	batch := &orderly.Batch{Queue: "orders", Delivery: "orders/0/1/1", Jobs: []orderly.Job{
		{ID: "order-1", RetryCount: -1, Payloads: []orderly.Payload{{Data: []byte(`{"sku":"A-1"}`), Score: 1}}},
	}}
	for _, key := range [][]byte{secret, []byte("guess")} {
		sender, err := webhook.New(&webhook.Config{URL: srv.URL, Secret: key})
		if err != nil {
			panic(err)
		}
		fmt.Println("delivered:", sender.Handle(context.Background(), batch) == nil)
		_ = sender.Close()
	}
	// Output:
	// verified delivery of order-1
	// delivered: true
	// rejected: not signed with our secret
	// delivered: false
}
