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
)

// A receiver checks that a delivery comes from the node holding the shared
// secret (handler.secret in the configuration file) before trusting it:
// VerifyRequest checks the Orderly-Signature header against the body and
// the time, and leaves the body readable.
func ExampleVerifyRequest() {
	secret := []byte("s3cr3t")
	receive := func(w http.ResponseWriter, r *http.Request) {
		if _, err := webhook.VerifyRequest(r, secret, 5*time.Minute, 0); err != nil {
			switch {
			case errors.Is(err, webhook.ErrNoSignature), errors.Is(err, webhook.ErrBadSignature):
				fmt.Println("rejected: not signed with our secret")
			case errors.Is(err, webhook.ErrSignatureExpired):
				fmt.Println("rejected: a replayed or delayed request")
			}
			http.Error(w, "bad signature", http.StatusUnauthorized) // fails the delivery
			return
		}
		var req webhook.Request
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
	signed, _ := webhook.New(&webhook.Config{URL: srv.URL, Client: srv.Client(), Secret: secret})
	fmt.Println("signed:", signed(context.Background(), batch) == nil)

	forged, _ := webhook.New(&webhook.Config{URL: srv.URL, Client: srv.Client(), Secret: []byte("guess")})
	fmt.Println("forged:", forged(context.Background(), batch) == nil)
	// Output:
	// verified delivery of order-1
	// signed: true
	// rejected: not signed with our secret
	// forged: false
}
