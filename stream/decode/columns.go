package decode

import (
	"fmt"
	"strings"
)

// columnSelector decides which flattened field names become columns. A
// pattern is an exact name, or a prefix ending in "*" ("user.*" keeps
// "user.id" and "user.address.zip"; "tax*" keeps "tax" and "taxGroup").
// An empty include list keeps everything; exclude wins over include.
//
// keep is called once per field of every record, so it does not allocate:
// exact names are looked up with the map[string(bytes)] idiom, which Go does
// without converting.
type columnSelector struct {
	includeExact  map[string]struct{}
	includePrefix []string
	excludeExact  map[string]struct{}
	excludePrefix []string
	all           bool // no include patterns: keep everything not excluded
	none          bool // no patterns at all: keep everything, skip the checks
}

func newColumnSelector(include, exclude []string) (*columnSelector, error) {
	s := &columnSelector{
		includeExact: map[string]struct{}{},
		excludeExact: map[string]struct{}{},
	}
	add := func(field string, p string, exact map[string]struct{}, prefix *[]string) error {
		p = strings.TrimSpace(p)
		if p == "" {
			return fmt.Errorf("%s: empty column pattern", field)
		}
		if strings.HasSuffix(p, "*") {
			pre := strings.TrimSuffix(p, "*")
			if strings.Contains(pre, "*") {
				return fmt.Errorf("%s: pattern %q: '*' is only allowed at the end", field, p)
			}
			*prefix = append(*prefix, pre)
			return nil
		}
		if strings.Contains(p, "*") {
			return fmt.Errorf("%s: pattern %q: '*' is only allowed at the end", field, p)
		}
		exact[p] = struct{}{}
		return nil
	}
	for _, p := range include {
		if err := add("Include", p, s.includeExact, &s.includePrefix); err != nil {
			return nil, err
		}
	}
	for _, p := range exclude {
		if err := add("Exclude", p, s.excludeExact, &s.excludePrefix); err != nil {
			return nil, err
		}
	}
	s.all = len(include) == 0
	s.none = s.all && len(exclude) == 0
	return s, nil
}

// keep reports whether the field called name is a column.
func (s *columnSelector) keep(name []byte) bool {
	if s.none {
		return true
	}
	if _, ok := s.excludeExact[string(name)]; ok {
		return false
	}
	for _, p := range s.excludePrefix {
		if hasPrefix(name, p) {
			return false
		}
	}
	if s.all {
		return true
	}
	if _, ok := s.includeExact[string(name)]; ok {
		return true
	}
	for _, p := range s.includePrefix {
		if hasPrefix(name, p) {
			return true
		}
	}
	return false
}

func hasPrefix(b []byte, p string) bool {
	return len(b) >= len(p) && string(b[:len(p)]) == p
}
