package stream

import (
	"testing"

	"github.com/odwatch/odwatch/discovery"
)

func mustDep(t *testing.T, s string) discovery.Dependency {
	t.Helper()
	d, err := discovery.ParseDependency(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
