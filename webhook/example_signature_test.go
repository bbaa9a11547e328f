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

// With Scheme wire.SchemeStandard (handler.signature: standard) the sender
// signs with Standard Webhooks, under the key of a whsec_ secret; the
// receiver verifies with the same secret string, as the Standard Webhooks
// libraries of other languages do. wire.VerifyRequestKeys accepts the
// old and the new secret while one replaces the other.
func ExampleConfig_standardWebhooks() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	const retired = "whsec_b2xkIHNlY3JldCwgcmV0aXJlZCBzb29u"
	receive := func(w http.ResponseWriter, r *http.Request) {
		if _, err := wire.VerifyRequestKeys(r, [][]byte{[]byte(secret), []byte(retired)}, 5*time.Minute, 0); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		fmt.Println("verified", r.Header.Get("Webhook-Id"))
		w.WriteHeader(http.StatusNoContent)
	}
	srv := httptest.NewServer(http.HandlerFunc(receive))
	defer srv.Close()

	key, err := wire.StandardKey(secret)
	if err != nil {
		panic(err)
	}
	sender, err := webhook.New(&webhook.Config{URL: srv.URL, Secret: key, Scheme: wire.SchemeStandard})
	if err != nil {
		panic(err)
	}
	defer sender.Close()
	batch := &orderly.Batch{Queue: "orders", Delivery: "orders/0/1/1", Jobs: []orderly.Job{
		{ID: "order-1", RetryCount: -1, Payloads: []orderly.Payload{{Data: []byte(`{"sku":"A-1"}`), Score: 1}}},
	}}
	fmt.Println("delivered:", sender.Handle(context.Background(), batch) == nil)
	// Output:
	// verified orders/0/1/1
	// delivered: true
}
