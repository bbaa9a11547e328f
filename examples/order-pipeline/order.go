package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/orderlyhq/orderly"
)

// Event is one payload of the orders queue: something that happened to an
// order.
type Event struct {
	// Event is created, paid or shipped.
	Event string  `json:"event"`
	Total float64 `json:"total,omitempty"`
}

// Order is the state each order id keeps (docs/contract.md §11): its status
// and what happened to it, oldest first.
type Order struct {
	// Status is created, paid, shipped or cancelled.
	Status string   `json:"status"`
	Total  float64  `json:"total,omitempty"`
	Events []string `json:"events"`
}

// Apply applies one event to the order and reports what the order's timer
// must do: set it (an order just created must be paid within the timeout)
// or clear it (paid). Events that do not fit the order's status are kept
// in its history, marked ignored: a payment after the order was cancelled,
// a shipment before the payment.
func (o *Order) Apply(e Event) (setTimer, clearTimer bool) {
	switch {
	case e.Event == "created" && o.Status == "":
		o.Status, o.Total = "created", e.Total
		o.Events = append(o.Events, "created")
		return true, false
	case e.Event == "paid" && o.Status == "created":
		o.Status = "paid"
		o.Events = append(o.Events, "paid")
		return false, true
	case e.Event == "shipped" && o.Status == "paid":
		o.Status = "shipped"
		o.Events = append(o.Events, "shipped")
		return false, false
	}
	o.Events = append(o.Events, fmt.Sprintf("%s (ignored: %s)", e.Event, cmp.Or(o.Status, "unknown order")))
	return false, false
}

// Expire is the order's timer firing: an order still unpaid is cancelled.
func (o *Order) Expire() {
	if o.Status == "created" {
		o.Status = "cancelled"
		o.Events = append(o.Events, "cancelled (unpaid)")
	}
}

// NotificationsQueue receives a job per order that was paid, shipped or
// cancelled, emitted by the orders handler.
const NotificationsQueue = "notifications"

// Notification is the payload of a notifications job.
type Notification struct {
	Order  string `json:"order"`
	Status string `json:"status"`
}

// notify emits a notification when the order's status became paid,
// shipped or cancelled. The emit is committed with the order's state, in
// the same atomic step as its acknowledgement: a call that fails or is cut
// emits nothing, and a committed one emits once in effect (its score, the
// event's place in the order's history, makes a repeat merge).
func notify(j orderly.Job, was string, o Order) {
	switch {
	case o.Status == was:
		return
	case o.Status == "paid", o.Status == "shipped", o.Status == "cancelled":
		data, _ := json.Marshal(Notification{Order: j.ID, Status: o.Status}) // two strings always marshal
		score := float64(len(o.Events))
		j.Emit(orderly.Emit{Queue: NotificationsQueue, ID: j.ID, Payload: data, Score: &score})
	}
}

// Handler returns the orders queue's handler: for each order of the batch
// it reads the state, applies the events in order (and the timer, when it
// fired), sets the new state and timer, and emits a notification for each
// change of status that a customer hears of. Orderly commits them with the
// acknowledgement of the order, so an event is applied exactly once in
// effect, even when a call is retried or a node dies mid-call. An order
// whose state or payload does not decode fails alone (orderly.FailIDs).
func Handler(unpaidAfter time.Duration, logger *slog.Logger) orderly.HandlerFunc {
	return func(ctx context.Context, b *orderly.Batch) error {
		failed := map[string]error{}
		for _, j := range b.Jobs {
			var o Order
			if st := j.State(); st != nil { // nil: a new order
				if err := json.Unmarshal(st, &o); err != nil {
					failed[j.ID] = fmt.Errorf("state of %s: %w", j.ID, err)
					continue
				}
			}
			before := o.Status
			bad := false
			for _, p := range j.Payloads {
				var e Event
				if err := json.Unmarshal(p.Data, &e); err != nil {
					failed[j.ID] = fmt.Errorf("event of %s: %w", j.ID, err)
					bad = true
					break
				}
				was := o.Status
				set, unset := o.Apply(e)
				switch {
				case set:
					j.SetTimer(time.Now().Add(unpaidAfter))
				case unset:
					j.ClearTimer()
				}
				notify(j, was, o)
			}
			if bad {
				continue
			}
			if j.Timer() {
				was := o.Status
				o.Expire()
				notify(j, was, o)
			}
			data, err := json.Marshal(o)
			if err != nil {
				failed[j.ID] = err
				continue
			}
			j.SetState(data)
			logger.Info("order", "id", j.ID, "from", cmp.Or(before, "-"), "to", o.Status, "events", len(j.Payloads), "timer", j.Timer())
		}
		if len(failed) > 0 {
			return orderly.FailIDs(failed)
		}
		return nil
	}
}
