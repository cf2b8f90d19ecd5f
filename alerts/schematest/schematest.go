// Package schematest validates JSON documents against the subset of JSON
// Schema (draft 2020-12) that alerts/event.schema.json uses: type, enum,
// const, pattern, format date-time, minimum, maximum, properties,
// required, additionalProperties (false or a schema), items, oneOf and
// local $ref ("#/$defs/name"). A keyword outside the subset is an error,
// so the schema cannot grow past what is checked. Tests import it: every
// event a test emits is validated against the published schema.
package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Schema is a compiled schema.
type Schema struct {
	root map[string]any
}

// known are the keywords Validate checks, and the annotations it ignores.
var known = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "$ref": true, "title": true, "description": true,
	"type": true, "enum": true, "const": true, "pattern": true, "format": true, "minimum": true, "maximum": true,
	"properties": true, "required": true, "additionalProperties": true, "items": true, "oneOf": true,
}

// Compile parses a schema and checks it uses only the supported subset.
func Compile(schema []byte) (*Schema, error) {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s := &Schema{root: root}
	if err := s.check(root, "#"); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Schema) check(node map[string]any, at string) error {
	for k, v := range node {
		if !known[k] {
			return fmt.Errorf("schema %s: keyword %q is not supported by schematest", at, k)
		}
		sub := func(name string, x any) error {
			m, ok := x.(map[string]any)
			if !ok {
				return fmt.Errorf("schema %s/%s: want an object", at, name)
			}
			return s.check(m, at+"/"+name)
		}
		switch k {
		case "$defs", "properties":
			for name, x := range v.(map[string]any) {
				if err := sub(k+"/"+name, x); err != nil {
					return err
				}
			}
		case "items":
			if err := sub(k, v); err != nil {
				return err
			}
		case "additionalProperties":
			if _, ok := v.(bool); !ok {
				if err := sub(k, v); err != nil {
					return err
				}
			}
		case "oneOf":
			for i, x := range v.([]any) {
				if err := sub(fmt.Sprintf("oneOf/%d", i), x); err != nil {
					return err
				}
			}
		case "$ref":
			if _, err := s.resolve(v.(string)); err != nil {
				return err
			}
		case "pattern":
			if _, err := regexp.Compile(v.(string)); err != nil {
				return fmt.Errorf("schema %s: pattern: %w", at, err)
			}
		case "format":
			if v != "date-time" {
				return fmt.Errorf("schema %s: format %q is not supported", at, v)
			}
		}
	}
	return nil
}

func (s *Schema) resolve(ref string) (map[string]any, error) {
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return nil, fmt.Errorf("schema: $ref %q: only #/$defs/NAME is supported", ref)
	}
	defs, _ := s.root["$defs"].(map[string]any)
	def, ok := defs[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema: $ref %q: no such definition", ref)
	}
	return def, nil
}

// Validate checks one JSON document; the error names the first place that
// does not conform (a JSON pointer) and why.
func (s *Schema) Validate(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.validate(s.root, v, "")
}

// validate checks v against node, at the JSON pointer at: $ref first,
// then the keywords on any value, then those of v's kind, then oneOf.
func (s *Schema) validate(node map[string]any, v any, at string) error {
	if ref, ok := node["$ref"].(string); ok {
		def, err := s.resolve(ref)
		if err != nil {
			return err
		}
		if err := s.validate(def, v, at); err != nil {
			return err
		}
	}
	if err := validateAny(node, v); err != nil {
		return failAt(at, err)
	}
	if err := validateScalar(node, v); err != nil {
		return failAt(at, err)
	}
	if err := s.validateObject(node, v, at); err != nil {
		return err
	}
	if arr, ok := v.([]any); ok {
		if items, ok := node["items"].(map[string]any); ok {
			for i, x := range arr {
				if err := s.validate(items, x, fmt.Sprintf("%s/%d", at, i)); err != nil {
					return err
				}
			}
		}
	}
	return s.validateOneOf(node, v, at)
}

// failAt prefixes err with the pointer it was found at ("/" for the root).
func failAt(at string, err error) error {
	return fmt.Errorf("%s: %w", cmpOr(at, "/"), err)
}

// validateAny checks the keywords that apply to a value of any kind:
// type, const and enum.
func validateAny(node map[string]any, v any) error {
	if t, ok := node["type"]; ok {
		types := []string{}
		switch t := t.(type) {
		case string:
			types = append(types, t)
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			return fmt.Errorf("want %s, got %s", strings.Join(types, " or "), typeOf(v))
		}
	}
	if c, ok := node["const"]; ok && !equal(c, v) {
		return fmt.Errorf("want %v, got %v", c, v)
	}
	if e, ok := node["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equal(x, v) }) {
		return fmt.Errorf("%v is not one of %v", v, e)
	}
	return nil
}

// validateScalar checks a string's pattern and date-time format, and a
// number's minimum and maximum.
func validateScalar(node map[string]any, v any) error {
	if str, ok := v.(string); ok {
		if p, ok := node["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			return fmt.Errorf("%q does not match %s", str, p)
		}
		if f, ok := node["format"].(string); ok && f == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				return fmt.Errorf("%q is not an RFC 3339 date-time", str)
			}
		}
	}
	if n, ok := v.(json.Number); ok {
		x, _ := n.Float64()
		if m, ok := node["minimum"].(float64); ok && x < m {
			return fmt.Errorf("%v is below the minimum %v", x, m)
		}
		if m, ok := node["maximum"].(float64); ok && x > m {
			return fmt.Errorf("%v is above the maximum %v", x, m)
		}
	}
	return nil
}

// validateObject checks an object's required, properties and
// additionalProperties (its properties in key order).
func (s *Schema) validateObject(node map[string]any, v any, at string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for _, r := range asStrings(node["required"]) {
		if _, ok := obj[r]; !ok {
			return failAt(at, fmt.Errorf("missing required property %q", r))
		}
	}
	props, _ := node["properties"].(map[string]any)
	for _, k := range sortedKeys(obj) {
		if p, ok := props[k].(map[string]any); ok {
			if err := s.validate(p, obj[k], at+"/"+k); err != nil {
				return err
			}
			continue
		}
		switch ap := node["additionalProperties"].(type) {
		case bool:
			if !ap {
				return failAt(at, fmt.Errorf("property %q is not allowed", k))
			}
		case map[string]any:
			if err := s.validate(ap, obj[k], at+"/"+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateOneOf checks that v matches exactly one of node's oneOf schemas.
func (s *Schema) validateOneOf(node map[string]any, v any, at string) error {
	one, ok := node["oneOf"].([]any)
	if !ok {
		return nil
	}
	var matched int
	var errs []string
	for _, x := range one {
		if err := s.validate(x.(map[string]any), v, at); err != nil {
			errs = append(errs, err.Error())
		} else {
			matched++
		}
	}
	if matched != 1 {
		return failAt(at, fmt.Errorf("matches %d of the oneOf schemas, want 1 (%s)", matched, strings.Join(errs, "; ")))
	}
	return nil
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f)
	}
	return false
}

func typeOf(v any) string {
	for _, t := range []string{"object", "array", "string", "boolean", "null", "integer", "number"} {
		if hasType(v, t) {
			return t
		}
	}
	return fmt.Sprintf("%T", v)
}

func equal(schemaValue, v any) bool {
	if n, ok := v.(json.Number); ok {
		f, _ := n.Float64()
		x, ok := schemaValue.(float64)
		return ok && x == f
	}
	return schemaValue == v
}

func asStrings(v any) []string {
	var out []string
	if a, ok := v.([]any); ok {
		for _, x := range a {
			out = append(out, x.(string))
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
