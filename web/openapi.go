package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/orderlyhq/orderly/web/openapi"
)

// openAPIPath serves the OpenAPI document. It needs no token: the document
// is the repository's, and holds no data.
const openAPIPath = "/api/v1/openapi.json"

// openAPI serves GET /api/v1/openapi.json: the OpenAPI 3.1 description of
// the API (package openapi), in JSON.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	doc, err := openapi.JSON()
	if err != nil {
		return fmt.Errorf("web: the OpenAPI document: %w", err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(doc)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(doc)
	}
	return nil
}
