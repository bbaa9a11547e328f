package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// readJSONBody reads a request body of at most maxBody bytes and checks
// that it is one well-formed JSON value. want describes the expected body
// for the message about an empty one.
func (s *Server) readJSONBody(w http.ResponseWriter, r *http.Request, want string) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		isJSON := mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
		if cs := params["charset"]; err != nil || !isJSON || cs != "" && !strings.EqualFold(cs, "utf-8") {
			return nil, &apiError{status: http.StatusUnsupportedMediaType,
				msg: fmt.Sprintf("unsupported Content-Type %q: send application/json (UTF-8)", ct)}
		}
	}
	tooLarge := &apiError{status: http.StatusRequestEntityTooLarge,
		msg: fmt.Sprintf("request body is larger than the limit of %d bytes", s.maxBody)}
	if r.ContentLength > s.maxBody {
		w.Header().Set("Connection", "close") // do not read the rest
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, tooLarge
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	if skipSpace(body, 0) == len(body) {
		return nil, badRequest("the request body is empty: send %s", want)
	}
	if !json.Valid(body) {
		// Unmarshal checks the syntax before decoding and reports where it
		// fails; the offset counts bytes from 1.
		err := json.Unmarshal(body, new(json.RawMessage))
		if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
			return nil, badRequest("malformed JSON at byte %d: %s", se.Offset, se.Error())
		}
		return nil, badRequest("malformed JSON: %v", err)
	}
	return body, nil
}

// queryParams parses the query string of a listing: every parameter must be
// known and given at most once.
func queryParams(r *http.Request, known ...string) (url.Values, error) {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("malformed query string: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		if !slices.Contains(known, k) {
			return nil, badField(truncate(k, 64), "unknown parameter (known: %s)", strings.Join(known, ", "))
		}
		if len(vals[k]) > 1 {
			return nil, badField(k, "given more than once")
		}
	}
	return vals, nil
}

// intParam reads an integer parameter; empty means 0 (the default).
func intParam(vals url.Values, name string) (int, error) {
	v := vals.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, badField(name, "%q is not an integer", truncate(v, 32))
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
		return false, badField(name, "%q is not a boolean: use true, false, 1 or 0", truncate(v, 32))
	}
}
