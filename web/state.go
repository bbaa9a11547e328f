package web

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
)

// Entity state of stateful queues (docs/contract.md §11).

// stateQueue returns the max_state_bytes of queue {q}, or a 404 when it is
// not a stateful queue of this node (or not a queue at all).
func (s *Server) stateQueue(r *http.Request) (string, int, error) {
	q := r.PathValue("q")
	max, ok := s.stateQueues[q]
	if !ok {
		return q, 0, &apiError{status: http.StatusNotFound, field: "queue",
			msg: fmt.Sprintf("queue %q is not a stateful queue (state: true) of this node", q)}
	}
	return q, max, nil
}

// getState serves GET /api/v1/queues/{q}/state/{id...}: the id's state and
// version ({"state": null, "version": 0} when it has none).
func (s *Server) getState(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	q, _, err := s.stateQueue(r)
	if err != nil {
		return err
	}
	st, err := s.store.GetState(r.Context(), q, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, apiv1.State{Data: st.Data, Version: st.Version, Deleted: st.Deleted})
	return nil
}

// putState serves PUT /api/v1/queues/{q}/state/{id...}: a compare-and-set.
// The body names the version it replaces; a stale one is answered 409 and
// writes nothing. "state": null deletes the state.
func (s *Server) putState(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	q, max, err := s.stateQueue(r)
	if err != nil {
		return err
	}
	body, err := s.readJSONBody(r, `{"state": <JSON value> | null, "version": n} or {"state_base64": "...", "version": n}`)
	if err != nil {
		return err
	}
	data, del, expected, err := apiv1.DecodeStateWrite(body)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	var v int64
	if del {
		// The delete leaves a tombstone one version up; deleting what is
		// already gone changes nothing.
		var ok bool
		ok, err = s.store.DeleteState(r.Context(), q, id, expected)
		if v = expected; ok {
			v++
		}
	} else {
		v, err = s.store.SetState(r.Context(), q, id, data, expected, max)
	}
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, apiv1.StateWritten{Version: v})
	return nil
}

// stateOf renders a lookup's state.
func stateOf(st *persistence.State) *apiv1.State {
	if st == nil {
		return nil
	}
	return &apiv1.State{Data: st.Data, Version: st.Version, Deleted: st.Deleted}
}

// maxFeedWait bounds the wait of GET /api/v1/queues/{q}/feed.
const maxFeedWait = 30 * time.Second

// getFeed serves GET /api/v1/queues/{q}/feed?from=&limit=&wait=: up to
// limit [100, at most 1000] entries of a stateful queue's change feed after
// position from ("0", the default: the oldest kept; "$": only new ones; or
// an entry's "pos"), waiting up to wait (a Go duration, at most 30s) for
// the first one (long poll). The answer's "next" is the position to read
// on from.
func (s *Server) getFeed(w http.ResponseWriter, r *http.Request) error {
	vals, err := queryParams(r, "from", "limit", "wait")
	if err != nil {
		return err
	}
	q, _, err := s.stateQueue(r)
	if err != nil {
		return err
	}
	limit, err := countParam(vals, "limit", 1000)
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = 100
	}
	var wait time.Duration
	if v := vals.Get("wait"); v != "" {
		wait, err = time.ParseDuration(v)
		if err != nil || wait < 0 || wait > maxFeedWait {
			return badField("wait", "must be a duration from 0s to %s, such as 10s", maxFeedWait)
		}
	}
	from := vals.Get("from")
	if from == "" {
		from = persistence.FeedOldest
	} else if err := checkFeedPos(from); err != nil {
		return err
	}
	if wait > 0 {
		select {
		case s.feedWaits <- struct{}{}:
			defer func() { <-s.feedWaits }()
		default:
			return &apiError{status: http.StatusTooManyRequests, retryAfter: "1", msg: fmt.Sprintf(
				"too many change-feed long polls wait on this node (at most %d); retry later, on another node, or read without wait",
				cap(s.feedWaits))}
		}
	}
	entries, next, err := s.store.ReadFeed(r.Context(), q, from, limit, wait)
	if err != nil {
		return err
	}
	out := apiv1.Feed{Entries: make([]apiv1.FeedEntry, len(entries)), Next: next}
	for i, e := range entries {
		out.Entries[i] = apiv1.FeedEntry{Pos: e.Pos, ID: e.ID, Version: e.Version, Deleted: e.Deleted, Data: e.Data,
			SHA1: e.Hash, At: persistence.UnixSeconds(e.At)}
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// checkFeedPos checks a feed position given as from: "0", "$", or an
// entry's "pos", <milliseconds>-<sequence> (or <milliseconds> alone), each
// an unsigned 64-bit integer, the range of a Redis stream id: the store
// would refuse a larger one as a failure of its own.
func checkFeedPos(from string) error {
	if from == persistence.FeedNew {
		return nil
	}
	ms, seq, dash := strings.Cut(from, "-")
	parts := []string{ms}
	if dash {
		parts = append(parts, seq)
	}
	for _, part := range parts {
		if part == "" || strings.IndexFunc(part, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
			return badField("from", `must be "0", "$" or an entry's "pos" (such as 1764150000000-0), got %q`, jsonscan.Truncate(from, 64))
		}
		if _, err := strconv.ParseUint(part, 10, 64); err != nil {
			return badField("from", "%q is out of range: each part of a position is at most %d", jsonscan.Truncate(from, 64), uint64(math.MaxUint64))
		}
	}
	return nil
}
