// Package openapi holds the OpenAPI 3.1 description of Orderly's HTTP API
// (openapi.yaml): every route of a node, the pull protocol, and the webhook
// request and answer as its webhooks section. The node serves it as JSON at
// GET /api/v1/openapi.json; the web package's tests validate each request
// they make and each answer they get against it, and check that it names
// every route the server registers and no other.
package openapi

import (
	_ "embed" // the document
	"encoding/json"
	"fmt"
	"sync"

	"go.yaml.in/yaml/v3"
)

// YAML is the document as written, in YAML.
//
//go:embed openapi.yaml
var YAML []byte

// JSON returns the document in JSON, as the node serves it. The conversion
// is done once; the caller must not change the slice.
func JSON() ([]byte, error) { return asJSON() }

var asJSON = sync.OnceValues(func() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(YAML, &doc); err != nil {
		return nil, fmt.Errorf("openapi: reading openapi.yaml: %w", err)
	}
	out, err := json.Marshal(jsonable(doc))
	if err != nil {
		return nil, fmt.Errorf("openapi: writing JSON: %w", err)
	}
	return out, nil
})

// jsonable turns what YAML decoded into values encoding/json writes:
// mappings with keys that are not strings (a status code such as 200)
// become objects with the keys as text.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonable(e)
		}
		return v
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = jsonable(e)
		}
		return v
	}
	return v
}
