package history

import (
	"time"

	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// unanswered is the End of a call still being answered: it lasts
// forever, so that any later call of its ids counts as an overlap.
var unanswered = time.Unix(1<<40, 0)

// outcomes maps the answer fields of webhooktest.Call.Chose to outcomes.
var outcomes = map[string]string{"retry_in": Snoozed, "dead": Dead, "discard": Discarded}

// FromWebhook returns the calls a webhook receiver recorded as handler
// calls, one per delivered job, in the receiver's order. A job is acked
// when its call acknowledged it; Node and Delivery are the delivery's name
// (its lease epoch tells redeliveries apart), a payload's Data is its
// stored bytes, and Version is the version of the id's state it was given.
// An id whose answer chose an outcome (retry_in, dead, discard) has it as
// its Outcome. A call still being answered is not acked and never ends.
func FromWebhook(calls []webhooktest.Call) []Call {
	var out []Call
	for i := range calls {
		c := &calls[i]
		for _, j := range c.Request.Jobs {
			ps := make([]Payload, len(j.Payloads))
			for k, p := range j.Payloads {
				ps[k] = Payload{Data: string(p.Data), Score: p.Score}
			}
			end := c.End
			if end.IsZero() {
				end = unanswered
			}
			out = append(out, Call{ID: j.ID, Node: c.Delivery(), Delivery: c.Delivery(),
				Start: c.Start, End: end, Payloads: ps, Acked: c.Acked(j.ID), Version: j.Version,
				Outcome: outcomes[c.Chose(j.ID)]})
		}
	}
	return out
}
