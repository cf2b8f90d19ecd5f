package testkit

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// SharedData returns the path of the shared dataset name (a file or
// directory under ../shared/data, next to the module's root), or skips
// the test when it is absent.
func SharedData(t testing.TB, name string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("shared data %s: %v", name, err)
	}
	path := filepath.Join(root, "..", "shared", "data", name)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		t.Skipf("shared data %s absent (want %s): the datasets live in ../shared/data next to the checkout", name, path)
	} else if err != nil {
		t.Fatalf("shared data %s: %v", name, err)
	}
	return path
}

// moduleRoot is the nearest directory at or above the working directory
// (a test's package directory) that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
