package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/orderlyhq/orderly/webhook/wire"
)

// A receiver written in Go imports only this package: it decodes each
// delivery into a Request and answers with an Answer that fails some ids;
// the other ids are acknowledged. An empty 2xx answer acknowledges every
// id; any other status fails the whole delivery, which is retried.
func Example() {
	receive := func(w http.ResponseWriter, r *http.Request) {
		var req wire.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest) // fails the delivery
			return
		}
		fmt.Println("delivery:", r.Header.Get(wire.DeliveryHeader))
		failed := map[string]string{}
		for _, j := range req.Jobs {
			// Data holds the stored bytes, whether they came as "payload"
			// (compact JSON) or as "payload_base64" (anything else).
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
		_ = json.NewEncoder(w).Encode(wire.Answer{Failed: failed})
	}
	srv := httptest.NewServer(http.HandlerFunc(receive))
	defer srv.Close()

	// The node's side (package webhook sends this): one delivery of two
	// jobs.
	body, err := json.Marshal(wire.Request{Queue: "orders", Jobs: []wire.Job{
		{ID: "order-1", RetryCount: -1, Payloads: []wire.Payload{{Data: []byte(`{"sku":"A-1"}`), Score: 1}}},
		{ID: "order-2", RetryCount: 3, Payloads: []wire.Payload{{Data: []byte("gift wrap"), Score: 2}}},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("body: %s\n", body)
	req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set(wire.DeliveryHeader, "orders/0/1/1")
	resp, err := srv.Client().Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Printf("answer: %s %s", resp.Status, answer)
	// Output:
	// body: {"queue":"orders","shard":0,"jobs":[{"id":"order-1","retry_count":-1,"perform_at":0,"payloads":[{"payload":{"sku":"A-1"},"score":1}]},{"id":"order-2","retry_count":3,"perform_at":0,"payloads":[{"payload_base64":"Z2lmdCB3cmFw","score":2}]}]}
	// delivery: orders/0/1/1
	// order-1 (retry_count -1): {"sku":"A-1"}
	// order-2 (retry_count 3): gift wrap
	// answer: 200 OK {"failed":{"order-2":"card declined"}}
}

// A receiver checks that a delivery comes from the node holding the shared
// secret (handler.secret in the configuration file) before trusting it:
// VerifyRequest checks the Orderly-Signature header against the body and
// the time, and leaves the body readable.
func ExampleVerifyRequest() {
	secret := []byte("s3cr3t")
	receive := func(w http.ResponseWriter, r *http.Request) {
		if _, err := wire.VerifyRequest(r, secret, 5*time.Minute, 0); err != nil {
			switch {
			case errors.Is(err, wire.ErrNoSignature), errors.Is(err, wire.ErrBadSignature):
				fmt.Println("rejected: not signed with our secret")
			case errors.Is(err, wire.ErrSignatureExpired):
				fmt.Println("rejected: a replayed or delayed request")
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

	// The node signs each request with the queue's secret; here the
	// signature is made by hand, once with the secret and once without.
	body := []byte(`{"queue":"orders","shard":0,"jobs":[{"id":"order-1","retry_count":-1,"perform_at":0,"payloads":[]}]}`)
	for _, key := range [][]byte{secret, []byte("guess")} {
		req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		if err != nil {
			panic(err)
		}
		req.Header.Set(wire.SignatureHeader, wire.Sign(key, time.Now(), body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		_ = resp.Body.Close()
		fmt.Println("status:", resp.StatusCode)
	}
	// Output:
	// verified delivery of order-1
	// status: 204
	// rejected: not signed with our secret
	// status: 401
}
