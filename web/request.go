package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/orderlyhq/orderly/web/internal/jsonscan"
)

// readJSONBody reads a request body of at most maxBody bytes and checks
// that it is one well-formed JSON value. want describes the expected body
// for the message about an empty one.
func (s *Server) readJSONBody(r *http.Request, want string) ([]byte, error) {
	body, err := s.readUncheckedJSONBody(r, want)
	if err != nil {
		return nil, err
	}
	return body, checkJSON(body)
}

// readUncheckedJSONBody is readJSONBody for a caller that checks the
// syntax itself, in its own pass over the body.
func (s *Server) readUncheckedJSONBody(r *http.Request, want string) ([]byte, error) {
	if err := checkJSONType(r); err != nil {
		return nil, err
	}
	body, err := s.readBody(r)
	if err != nil {
		return nil, err
	}
	if jsonscan.SkipSpace(body, 0) == len(body) {
		return nil, badRequest("the request body is empty: send %s", want)
	}
	return body, nil
}

// readNoBody checks the body of a request that takes none: it must be
// empty (whatever its Content-Type, as curl -d "" sends a form type) or the
// empty JSON object {}.
func (s *Server) readNoBody(r *http.Request) error {
	body, err := s.readBody(r)
	if err != nil || jsonscan.SkipSpace(body, 0) == len(body) {
		return err
	}
	if err := checkJSONType(r); err != nil {
		return err
	}
	if err := checkJSON(body); err != nil {
		return err
	}
	if k := jsonscan.KindOf(body); k != "an object" {
		return badRequest("this endpoint takes no body (or {}), got %s", k)
	}
	return jsonscan.EachField(body, func(key, _ []byte) error {
		return badField(jsonscan.Truncate(string(key), 64), "unknown field: this endpoint takes no body (or {})")
	})
}

// checkJSONType rejects a Content-Type other than JSON in UTF-8; a missing
// one is accepted.
func checkJSONType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	isJSON := mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
	if cs := params["charset"]; err != nil || !isJSON || cs != "" && !strings.EqualFold(cs, "utf-8") {
		return &apiError{status: http.StatusUnsupportedMediaType,
			msg: fmt.Sprintf("unsupported Content-Type %q: send application/json (UTF-8)", jsonscan.Truncate(ct, 64))}
	}
	return nil
}

// checkJSON checks that body is one well-formed JSON value.
func checkJSON(body []byte) error {
	if json.Valid(body) {
		return nil
	}
	return malformed(body, nil)
}

// malformed is the error of a body that is not well-formed JSON, as cause
// (when not nil) found.
func malformed(body []byte, cause error) error {
	// Unmarshal checks the syntax before decoding and reports where it
	// fails; the offset counts bytes from 1.
	err := json.Unmarshal(body, new(json.RawMessage))
	if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
		return badRequest("malformed JSON at byte %d: %s", se.Offset, se.Error())
	}
	if err == nil {
		err = cause
	}
	return badRequest("malformed JSON: %v", err)
}

// queryParams parses the query string of a request: every parameter must
// be known and given at most once. With no known parameters, any is an
// error.
func queryParams(r *http.Request, known ...string) (url.Values, error) {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("malformed query string: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		switch {
		case k == "":
			return nil, badRequest("malformed query string: a parameter without a name")
		case len(known) == 0:
			return nil, badField(jsonscan.Truncate(k, 64), "unknown parameter: this endpoint takes none")
		case !slices.Contains(known, k):
			return nil, badField(jsonscan.Truncate(k, 64), "unknown parameter (known: %s)", strings.Join(known, ", "))
		case len(vals[k]) > 1:
			return nil, badField(k, "given more than once")
		}
	}
	return vals, nil
}

// countParam reads a count parameter: an integer from 1 to most; empty
// means 0, the store's default.
func countParam(vals url.Values, name string, most int) (int, error) {
	v := vals.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, badField(name, "%q is out of range: must be between 1 and %d", jsonscan.Truncate(v, 32), most)
	case err != nil:
		return 0, badField(name, "%q is not an integer", jsonscan.Truncate(v, 32))
	case n < 1 || n > most:
		return 0, badField(name, "must be between 1 and %d, got %d", most, n)
	}
	return n, nil
}

// boolParam reads a boolean parameter: true, false, 1 or 0; empty means
// false.
func boolParam(vals url.Values, name string) (bool, error) {
	switch v := vals.Get(name); {
	case v == "" || v == "0" || strings.EqualFold(v, "false"):
		return false, nil
	case v == "1" || strings.EqualFold(v, "true"):
		return true, nil
	default:
		return false, badField(name, "%q is not a boolean: use true, false, 1 or 0", jsonscan.Truncate(v, 32))
	}
}
