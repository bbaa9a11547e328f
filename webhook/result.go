package webhook

import (
	"bytes"
	"encoding/json"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// decodeResults decodes an answer's "result", each value compacted (JSON
// null is the value null, not a delete: a result is not a state).
func decodeResults(raw json.RawMessage, a *wire.Answer) error {
	const notValues = `"result" must be an object of JSON values`
	var results map[string]json.RawMessage
	if err := json.Unmarshal(raw, &results); err != nil || results == nil {
		return badAnswer(notValues)
	}
	a.Result = make(map[string]json.RawMessage, len(results))
	for id, v := range results {
		if v == nil {
			v = json.RawMessage("null")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return badAnswer(notValues)
		}
		a.Result[id] = buf.Bytes()
	}
	return nil
}

// applyResults hands the results of an answer to the batch's jobs
// (orderly.Job.SetResult); the node keeps them with the ids that are
// acknowledged, on a queue with retain_finished. Ids not in the batch are
// ignored and logged.
func (s *Sender) applyResults(b *orderly.Batch, a *wire.Answer) {
	if len(a.Result) == 0 {
		return
	}
	used := 0
	for _, j := range b.Jobs {
		if v, ok := a.Result[j.ID]; ok {
			used++
			j.SetResult(v)
		}
	}
	if used < len(a.Result) {
		s.logger.Warn(`webhook: the receiver's "result" names ids that are not in the batch; ignored`,
			"queue", b.Queue, "ignored", len(a.Result)-used)
	}
}
