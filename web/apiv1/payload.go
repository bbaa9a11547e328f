package apiv1

import (
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// Payloads converts stored payloads for an answer; never nil, so that an
// empty list is [] rather than null. The API shows a payload as the webhook
// sends it, wire.Payload (the stored bytes under "payload" when
// wire.IsCompactJSON holds for them, else under "payload_base64"), so that
// the same stored bytes read alike through both.
func Payloads(ps []persistence.Payload) []wire.Payload {
	out := make([]wire.Payload, len(ps))
	for i, p := range ps {
		out[i] = wire.Payload(p)
	}
	return out
}
