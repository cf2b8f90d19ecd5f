package main

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The config file is read key by key from its YAML node tree rather than
// decoded into runSettings at once, so that every error names the key, the
// file and the line (yaml.v3's own messages name Go types), an unknown key
// gets the nearest known ones, and the top-level stream keys can be
// inherited by every entry of `streams:` (an entry's own keys win).

// configKeyAliases are deprecated spellings of keys: the file may still use
// them, and loading it warns.
var configKeyAliases = map[string]string{"format": "record-format"}

// perStreamOnlyKeys name one stream: with a `streams:` list they belong in
// its entries, not at the top level (singleStreamFlags are their flags).
var perStreamOnlyKeys = map[string]bool{"name": true, "topic": true, "schema": true}

// keySet is the keys of one mapping of the file: name → field index path
// in the struct the mapping decodes into.
type keySet map[string][]int

// keysOf lists the yaml keys of struct type t (inline structs flattened).
func keysOf(t reflect.Type) keySet {
	ks := keySet{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case opts == "inline":
			for k, idx := range keysOf(f.Type) {
				ks[k] = append([]int{i}, idx...)
			}
		case name != "" && name != "-":
			ks[name] = []int{i}
		}
	}
	return ks
}

var (
	globalKeys = keysOf(reflect.TypeFor[runSettings]())
	streamKeys = keysOf(reflect.TypeFor[streamSettings]())
)

// configFile decodes one config file at path, collecting its deprecation
// warnings.
type configFile struct {
	path     string
	warnings []string
}

func (c *configFile) errAt(n *yaml.Node, problem, fix string) error {
	return usageErr(fmt.Sprintf("config %s:%d: %s", c.path, n.Line, problem), fix)
}

// loadConfigFile reads the YAML config at path. A missing file, a YAML
// syntax error, an unknown key and a bad value are each a usage error of
// their own, naming the file (and the line and key).
func loadConfigFile(path string) (runSettings, error) {
	var s runSettings
	data, err := os.ReadFile(path)
	if err != nil {
		return s, inputErr(fmt.Errorf("config: %w", err), "check the --config path")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return s, inputErr(fmt.Errorf("config %s: %w", path, err), "fix the YAML at that line; keys are flag names, e.g. window: 2000")
	}
	if len(doc.Content) == 0 {
		return s, nil // an empty file
	}
	c := &configFile{path: path}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return s, c.errAt(root, "the file is not a mapping of keys", "write one key a line, e.g. brokers: [localhost:9092]")
	}
	var entries []*yaml.Node
	err = c.decodeMapping(root, reflect.ValueOf(&s).Elem(), globalKeys, "", func(key, val *yaml.Node) (bool, error) {
		if key.Value != "streams" {
			return false, nil
		}
		if val.Kind != yaml.SequenceNode {
			return true, c.errAt(val, "streams: want a list of streams", "write each stream as a list entry: streams: [{topic: a}, {topic: b}]")
		}
		entries = val.Content
		return true, nil
	})
	if err != nil {
		return s, err
	}
	if len(entries) > 0 {
		if err := c.checkPerStreamOnly(root); err != nil {
			return s, err
		}
	}
	for i, e := range entries {
		st := inheritedStream(s.streamSettings)
		if e.Kind != yaml.MappingNode {
			return s, c.errAt(e, fmt.Sprintf("streams[%d]: want a mapping of stream keys", i), "e.g. - topic: payroll")
		}
		if err := c.decodeMapping(e, reflect.ValueOf(&st).Elem(), streamKeys, fmt.Sprintf("streams[%d].", i), nil); err != nil {
			return s, err
		}
		s.Streams = append(s.Streams, st)
	}
	s.warnings = c.warnings
	return s, nil
}

// inheritedStream is a streams: entry before its own keys: the top-level
// stream keys, lists copied so that no entry shares another's.
func inheritedStream(top streamSettings) streamSettings {
	st := top
	st.Include, st.Exclude = slices.Clone(top.Include), slices.Clone(top.Exclude)
	st.Ordinal, st.Pinned = slices.Clone(top.Ordinal), slices.Clone(top.Pinned)
	return st
}

// checkPerStreamOnly refuses a top-level key that names one stream when
// the file lists several.
func (c *configFile) checkPerStreamOnly(root *yaml.Node) error {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; perStreamOnlyKeys[k.Value] {
			return c.errAt(k, fmt.Sprintf("%s: set either top-level stream keys or streams:, not both (%s names one stream)", k.Value, k.Value),
				"move it into each entry of streams:")
		}
	}
	return nil
}

// decodeMapping decodes the keys of mapping m into the struct v, whose keys
// are ks (prefix names the mapping in errors). special, when set, handles
// the keys it reports handled (streams:) itself.
func (c *configFile) decodeMapping(m *yaml.Node, v reflect.Value, ks keySet, prefix string, special func(key, val *yaml.Node) (bool, error)) error {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i], m.Content[i+1]
		name := key.Value
		if alias, ok := configKeyAliases[name]; ok {
			c.warnings = append(c.warnings, fmt.Sprintf("config %s:%d: %s%s is deprecated; use %s", c.path, key.Line, prefix, name, alias))
			name = alias
		}
		if line, dup := seen[name]; dup {
			return c.errAt(key, fmt.Sprintf("%s%s is set twice (lines %d and %d)", prefix, name, line, key.Line), "keep one of them")
		}
		seen[name] = key.Line
		if special != nil {
			if done, err := special(key, val); done || err != nil {
				return err
			}
		}
		idx, ok := ks[name]
		if !ok {
			return c.unknownKey(key, ks, prefix)
		}
		f := v.FieldByIndex(idx)
		if f.Kind() == reflect.Struct && f.Type() != reflect.TypeFor[time.Duration]() {
			if val.Kind != yaml.MappingNode {
				return c.errAt(val, fmt.Sprintf("%s%s: want a mapping of keys", prefix, name), fmt.Sprintf("e.g. %s: {%s}", name, strings.Join(slices.Sorted(maps.Keys(keysOf(f.Type()))), ", ")))
			}
			if err := c.decodeMapping(val, f, keysOf(f.Type()), prefix+name+".", nil); err != nil {
				return err
			}
			continue
		}
		// A fresh value: decoding into f would write through a pointer
		// the entry shares with the top level it inherited.
		nv := reflect.New(f.Type())
		if err := val.Decode(nv.Interface()); err != nil || truncatedInt(f.Type(), val) {
			return c.errAt(val, fmt.Sprintf("%s%s: %q: want %s", prefix, name, val.Value, wantOf(f.Type())), "")
		}
		f.Set(nv.Elem())
	}
	return nil
}

// unknownKey is the error of a key that is not in ks: the nearest keys, or
// where a key of the other level belongs.
func (c *configFile) unknownKey(key *yaml.Node, ks keySet, prefix string) error {
	name := key.Value
	if _, global := globalKeys[name]; global && prefix != "" && strings.HasPrefix(prefix, "streams[") {
		return c.errAt(key, fmt.Sprintf("%s%s is not a stream key", prefix, name), "set "+name+" at the top level of the file; it applies to every stream")
	}
	names := slices.Sorted(maps.Keys(ks))
	if prefix == "" {
		names = append(names, "streams")
	}
	fix := "see the keys in the README's Configuration table (they are the flags of odwatch run -h)"
	if near := nearest(name, names, 3); len(near) > 0 {
		fix = "did you mean " + strings.Join(near, ", ") + "?"
	}
	return c.errAt(key, fmt.Sprintf("unknown key %s%s", prefix, name), fix)
}

// truncatedInt: yaml.v3 decodes 1.5 into an int as 1.
func truncatedInt(t reflect.Type, val *yaml.Node) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Int && val.ShortTag() == "!!float"
}

// wantOf says what a key of type t takes, for a bad value.
func wantOf(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "a duration such as 30s, 5m or 1h"
	case reflect.TypeFor[*marginFlag](), reflect.TypeFor[*autoShare]():
		return "a share in [0, 1) or auto"
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float64:
		return "a number"
	case reflect.Int:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list, e.g. [a, b]"
	}
	return "a single value"
}
