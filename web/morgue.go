package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
)

// listOptions reads a listing's query parameters; the store validates their
// values (order, bounds, limit, cursor) and names the one at fault. An
// absent or empty order is def: perform_at for the jobs (the order the
// dashboard shows first, and a bounded read at any size), id for the
// morgue.
func listOptions(r *http.Request, def persistence.Order) (persistence.ListOptions, error) {
	var opts persistence.ListOptions
	vals, err := queryParams(r, "order", "min", "max", "rev", "limit", "cursor", "payloads")
	if err != nil {
		return opts, err
	}
	opts.Order = persistence.Order(vals.Get("order"))
	if opts.Order == "" {
		opts.Order = def
	}
	opts.Min, opts.Max, opts.Cursor = vals.Get("min"), vals.Get("max"), vals.Get("cursor")
	if opts.Rev, err = boolParam(vals, "rev"); err != nil {
		return opts, err
	}
	if opts.Limit, err = countParam(vals, "limit", persistence.MaxListLimit); err != nil {
		return opts, err
	}
	if opts.Payloads, err = countParam(vals, "payloads", persistence.MaxLookupPayloads); err != nil {
		return opts, err
	}
	return opts, nil
}

// listMorgue serves GET /api/v1/queues/{q}/morgue.
// With error=<text> it searches the last errors (search.go).
func (s *Server) listMorgue(w http.ResponseWriter, r *http.Request) error {
	text, err := errorParam(r)
	if err != nil {
		return err
	}
	opts, err := listOptions(withoutParam(r, "error"), persistence.OrderID)
	if err != nil {
		return err
	}
	q := r.PathValue("q")
	var page persistence.MorguePage
	var scanned *int
	if text != "" {
		n := 0
		page.Entries, page.Next, n, err = searchErrors(r.Context(), opts, text,
			func(ctx context.Context, o persistence.ListOptions) ([]persistence.MorgueEntry, string, error) {
				p, err := s.store.ListMorgue(ctx, q, o)
				return p.Entries, p.Next, err
			}, func(e persistence.MorgueEntry) string { return e.Error })
		scanned = &n
	} else {
		page, err = s.store.ListMorgue(r.Context(), q, opts)
	}
	if err != nil {
		return err
	}
	ans := apiv1.MorguePage{Entries: make([]apiv1.MorgueEntry, len(page.Entries)), Next: page.Next, Scanned: scanned}
	for i, e := range page.Entries {
		ans.Entries[i] = morgueEntryOf(e)
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}

// morgueEntryOf converts a morgue entry to its wire form.
func morgueEntryOf(e persistence.MorgueEntry) apiv1.MorgueEntry {
	m := apiv1.MorgueEntry{
		ID:           e.ID,
		UpdatedAt:    persistence.UnixSeconds(e.UpdatedAt),
		Error:        e.Error,
		Payloads:     apiv1.Payloads(e.Payloads),
		PayloadCount: e.PayloadCount,
	}
	if !e.FirstAt.IsZero() {
		at := persistence.UnixSeconds(e.FirstAt)
		m.FirstAt = &at
	}
	return m
}

// requeueMorgue serves POST /api/v1/queues/{q}/morgue/requeue, body
// {"ids": [...]} or {"all": true}. It is synchronous and answers how many
// entries went back to the queue (ids not in the morgue are skipped).
func (s *Server) requeueMorgue(w http.ResponseWriter, r *http.Request) error {
	n, err := s.onSelection(w, r, s.store.RequeueMorgue, s.store.RequeueMorgueAll)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, apiv1.Requeued{Requeued: n})
	return nil
}

// deleteMorgue serves POST /api/v1/queues/{q}/morgue/delete, body
// {"ids": [...]} or {"all": true}. It is synchronous and answers how many
// entries it deleted (ids not in the morgue are skipped).
func (s *Server) deleteMorgue(w http.ResponseWriter, r *http.Request) error {
	n, err := s.onSelection(w, r, s.store.DeleteMorgue, s.store.DeleteMorgueAll)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, apiv1.Deleted{Deleted: n})
	return nil
}

// onSelection decodes a morgue action's body and applies the action to the
// named ids (some) or to the whole morgue (all) of queue {q}.
func (s *Server) onSelection(w http.ResponseWriter, r *http.Request,
	some func(ctx context.Context, queue string, ids []string) (int, error),
	all func(ctx context.Context, queue string) (int, error),
) (int, error) {
	if _, err := queryParams(r); err != nil {
		return 0, err
	}
	body, err := s.readJSONBody(r, `{"ids": [...]} or {"all": true}`)
	if err != nil {
		return 0, err
	}
	sel, err := decodeSelection(body)
	if err != nil {
		return 0, err
	}
	if sel.all {
		return all(r.Context(), r.PathValue("q"))
	}
	return some(r.Context(), r.PathValue("q"), sel.ids)
}

// selection is what a morgue action applies to: the named ids, or all.
type selection struct {
	ids []string
	all bool
}

// decodeSelection decodes {"ids": [...]} or {"all": true}: exactly one of
// the two; {"all": false} and {} are errors, {"ids": []} selects nothing.
func decodeSelection(body []byte) (selection, error) {
	var (
		sel            selection
		hasIDs, hasAll bool
	)
	if k := jsonscan.KindOf(body); k != "an object" {
		return sel, badRequest(`the body must be {"ids": [...]} or {"all": true}, got %s`, k)
	}
	err := jsonscan.EachField(body, func(key, val []byte) error {
		switch string(key) {
		case "ids":
			if hasIDs {
				return badField("ids", "given more than once")
			}
			hasIDs = true
			ids, err := decodeIDs(val)
			sel.ids = ids
			return err
		case "all":
			if hasAll {
				return badField("all", "given more than once")
			}
			hasAll = true
			if k := jsonscan.KindOf(val); k != "a boolean" {
				return badField("all", "must be true, got %s", k)
			}
			if sel.all = string(val) == "true"; !sel.all {
				return badField("all", `must be true; to select given entries send {"ids": [...]}`)
			}
			return nil
		default:
			return badField(jsonscan.Truncate(string(key), 64), `unknown field (known: "ids", "all")`)
		}
	})
	switch {
	case err != nil:
		return sel, err
	case hasIDs && hasAll:
		return sel, badField("all", `give "ids" or "all", not both`)
	case !hasIDs && !hasAll:
		return sel, badField("ids", `required: give "ids": [...] or "all": true`)
	}
	return sel, nil
}

// decodeIDs decodes a JSON array of valid job ids.
func decodeIDs(val []byte) ([]string, error) {
	if k := jsonscan.KindOf(val); k != "an array" {
		return nil, badField("ids", "must be an array of ids, got %s", k)
	}
	ids := []string{}
	err := jsonscan.EachElement(val, func(i int, val []byte) error {
		id, err := jsonscan.DecodeString(val)
		if err == nil {
			err = persistence.ValidateID(id, -1)
			if fe := (*persistence.FieldError)(nil); errors.As(err, &fe) {
				err = errors.New(fe.Reason)
			}
		}
		if err != nil {
			return badField(fmt.Sprintf("ids[%d]", i), "%v", err)
		}
		ids = append(ids, id)
		return nil
	})
	return ids, err
}
