package shard

import "github.com/orderlyhq/orderly/persistence"

// dropExpired takes the payloads that expired before the fetch
// (docs/contract.md §3.15) out of a fetched window, judged by the batch's
// FetchedAt (the store's clock), before any handler sees it: an id left
// with no payload (and not brought by its timer) leaves the window. It
// returns what it took, for the settle, which removes and counts those
// payloads whatever the outcome of their ids.
func dropExpired(b *persistence.Batch) []persistence.Expired {
	var out []persistence.Expired
	kept := b.Jobs[:0:0]
	for i, j := range b.Jobs {
		ps := persistence.ExpiredIn(j, b.FetchedAt)
		if len(ps) == 0 {
			if out != nil {
				kept = append(kept, j)
			}
			continue
		}
		if out == nil {
			kept = append(kept, b.Jobs[:i]...)
		}
		out = append(out, persistence.Expired{ID: j.ID, Payloads: ps})
		live := make([]persistence.Payload, 0, len(j.Payloads)-len(ps))
		for k, p := range j.Payloads {
			if len(ps) > 0 && ps[0] == k {
				ps = ps[1:]
				continue
			}
			live = append(live, p)
		}
		if len(live) == 0 && !j.Timer {
			continue // nothing of it is handed over
		}
		j.Payloads = live
		kept = append(kept, j)
	}
	if out != nil {
		b.Jobs = kept
	}
	return out
}

// expiredPayloads counts the payloads of ex.
func expiredPayloads(ex []persistence.Expired) int {
	n := 0
	for _, e := range ex {
		n += len(e.Payloads)
	}
	return n
}
