// Command kubeschema writes the JSON schemas kubeconform validates against,
// one file per kind (deployment-apps-v1.json, service-v1.json, ...), from a
// Kubernetes OpenAPI v2 document (swagger.json). It makes what kubeconform
// would otherwise download (yannh/kubernetes-json-schema's
// "standalone-strict" flavour) where that cannot be downloaded:
//
//   - every $ref is inlined (standalone): a schema file needs no other;
//   - every object with properties refuses properties it does not name
//     (strict: a misspelt key is an error, not silently dropped);
//   - int-or-string fields take an integer or a string, quantities a
//     string or a number, and an optional field may be null, as the API
//     server reads them.
//
// With -crd, it also writes the schema of each version of a
// CustomResourceDefinition (YAML), made strict the same way (except where
// the CRD keeps unknown fields).
//
// .ci/chart runs it on the swagger.json that k8s.io/cli-runtime ships
// (artifacts/openapi, a whole cluster's API) and on the CRDs of the
// ServiceMonitor (prometheus-operator) and the ScaledObject (KEDA), and
// gives the directory to kubeconform -schema-location.
//
//	go run ./.ci/kubeschema -swagger swagger.json -crd servicemonitors.yaml -out DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

func main() {
	swagger := flag.String("swagger", "", "Kubernetes OpenAPI v2 document (swagger.json)")
	out := flag.String("out", "", "directory to write the schemas to")
	var crds []string
	flag.Func("crd", "a CustomResourceDefinition (YAML) whose versions to write too; repeatable", func(s string) error {
		crds = append(crds, s)
		return nil
	})
	flag.Parse()
	err := run(*swagger, *out)
	for _, c := range crds {
		if err == nil {
			err = crd(c, *out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeschema:", err)
		os.Exit(1)
	}
}

// crd writes the schema of each served version of the CRD in path.
func crd(path, out string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc struct {
		Spec struct {
			Group string `yaml:"group"`
			Names struct {
				Kind string `yaml:"kind"`
			} `yaml:"names"`
			Versions []struct {
				Name   string `yaml:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
				} `yaml:"schema"`
			} `yaml:"versions"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, v := range doc.Spec.Versions {
		if v.Schema.OpenAPIV3Schema == nil {
			return fmt.Errorf("%s: version %s has no schema", path, v.Name)
		}
		schema := strictCRD(v.Schema.OpenAPIV3Schema)
		schema["$schema"] = "http://json-schema.org/schema#"
		data, err := json.Marshal(schema)
		if err != nil {
			return err
		}
		g := gvk{Group: doc.Spec.Group, Version: v.Name, Kind: doc.Spec.Names.Kind}
		if err := os.WriteFile(filepath.Join(out, fileName(g)), data, 0o644); err != nil {
			return err
		}
		fmt.Printf("kubeschema: %s %s/%s from %s\n", g.Kind, g.Group, g.Version, filepath.Base(path))
	}
	return nil
}

// strictCRD makes a CRD schema strict: objects with properties refuse
// others, unless the CRD keeps unknown fields there.
func strictCRD(s map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range s {
		switch k {
		case "properties", "items", "additionalProperties", "format":
		default:
			if !strings.HasPrefix(k, "x-") {
				out[k] = v
			}
		}
	}
	if s["x-kubernetes-int-or-string"] == true {
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
	}
	if items, ok := s["items"].(map[string]any); ok {
		out["items"] = strictCRD(items)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		out["additionalProperties"] = strictCRD(ap)
	} else if ap, ok := s["additionalProperties"].(bool); ok {
		out["additionalProperties"] = ap
	}
	if props, ok := s["properties"].(map[string]any); ok {
		ps := map[string]any{}
		for n, p := range props {
			if pm, ok := p.(map[string]any); ok {
				ps[n] = strictCRD(pm)
			}
		}
		out["properties"] = ps
		if _, ok := out["additionalProperties"]; !ok && s["x-kubernetes-preserve-unknown-fields"] != true {
			out["additionalProperties"] = false
		}
	}
	return out
}

type gvk struct{ Group, Version, Kind string }

func run(swagger, out string) error {
	raw, err := os.ReadFile(swagger)
	if err != nil {
		return err
	}
	var doc struct {
		Info        map[string]any            `json:"info"`
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", swagger, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	c := &converter{defs: doc.Definitions}
	names := make([]string, 0, len(doc.Definitions))
	for n := range doc.Definitions {
		names = append(names, n)
	}
	sort.Strings(names)
	written := 0
	for _, n := range names {
		def := doc.Definitions[n]
		kinds, _ := def["x-kubernetes-group-version-kind"].([]any)
		for _, k := range kinds {
			var g gvk
			b, _ := json.Marshal(k)
			if err := json.Unmarshal(b, &g); err != nil || g.Kind == "" {
				continue
			}
			if strings.HasSuffix(g.Kind, "List") || g.Kind == "WatchEvent" || g.Kind == "DeleteOptions" {
				continue
			}
			schema := c.convert(n, map[string]bool{})
			schema["$schema"] = "http://json-schema.org/schema#"
			props, _ := schema["properties"].(map[string]any)
			if props != nil {
				apiVersion := g.Version
				if g.Group != "" {
					apiVersion = g.Group + "/" + g.Version
				}
				props["apiVersion"] = map[string]any{"type": "string", "enum": []any{apiVersion}}
				props["kind"] = map[string]any{"type": "string", "enum": []any{g.Kind}}
			}
			data, err := json.Marshal(schema)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(out, fileName(g)), data, 0o644); err != nil {
				return err
			}
			written++
		}
	}
	if written == 0 {
		return fmt.Errorf("%s: no kind found", swagger)
	}
	fmt.Printf("kubeschema: %d kinds from %s (%v) into %s\n", written, swagger, doc.Info["title"], out)
	return nil
}

// fileName is kubeconform's {{ .ResourceKind }}{{ .KindSuffix }}.json:
// the kind in lower case, then the group's first label (none for the core
// group) and the version.
func fileName(g gvk) string {
	name := strings.ToLower(g.Kind)
	if g.Group != "" {
		name += "-" + strings.ToLower(strings.Split(g.Group, ".")[0])
	}
	return name + "-" + strings.ToLower(g.Version) + ".json"
}

type converter struct{ defs map[string]map[string]any }

const (
	intOrString = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
	quantity    = "io.k8s.apimachinery.pkg.api.resource.Quantity"
)

// convert returns the definition name, standalone and strict. A definition
// met again below itself (a recursive type) becomes {}: anything.
func (c *converter) convert(name string, seen map[string]bool) map[string]any {
	switch name {
	case intOrString:
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
	case quantity:
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
	}
	def, ok := c.defs[name]
	if !ok || seen[name] {
		return map[string]any{}
	}
	seen[name] = true
	defer delete(seen, name)
	return c.schema(def, seen)
}

func (c *converter) schema(s map[string]any, seen map[string]bool) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		return c.convert(strings.TrimPrefix(ref, "#/definitions/"), seen)
	}
	out := map[string]any{}
	for k, v := range s {
		switch k {
		case "properties", "items", "additionalProperties", "x-kubernetes-group-version-kind", "format":
		default:
			if !strings.HasPrefix(k, "x-") {
				out[k] = v
			}
		}
	}
	if s["format"] == "int-or-string" {
		return c.convert(intOrString, seen)
	}
	if items, ok := s["items"].(map[string]any); ok {
		out["items"] = c.schema(items, seen)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		out["additionalProperties"] = c.schema(ap, seen)
	} else if ap, ok := s["additionalProperties"].(bool); ok {
		out["additionalProperties"] = ap
	}
	if props, ok := s["properties"].(map[string]any); ok {
		required := map[string]bool{}
		if r, ok := s["required"].([]any); ok {
			for _, n := range r {
				required[fmt.Sprint(n)] = true
			}
		}
		ps := map[string]any{}
		for n, p := range props {
			ps[n] = nullable(c.schema(p.(map[string]any), seen), !required[n])
		}
		out["properties"] = ps
		if _, ok := out["additionalProperties"]; !ok {
			out["additionalProperties"] = false
		}
	}
	return out
}

// nullable lets an optional field be null, as the API server takes it.
func nullable(s map[string]any, optional bool) map[string]any {
	if !optional {
		return s
	}
	if t, ok := s["type"].(string); ok {
		s["type"] = []any{t, "null"}
		return s
	}
	if one, ok := s["oneOf"].([]any); ok {
		s["oneOf"] = append(one, map[string]any{"type": "null"})
	}
	return s
}
