package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// SetAside moves the store in dir out of the way, keeping every file, so
// that Open creates a fresh store there; it returns where the files went.
// It renames dir to a sibling "<dir>.damaged-<UTC time>"; when dir cannot be
// renamed (it is a mount point, say) it moves dir's entries into a new
// subdirectory "damaged-<UTC time>" of dir instead, which Open ignores.
// Nothing is ever deleted. The store must not be open.
func SetAside(dir string, now time.Time) (string, error) {
	stamp := now.UTC().Format("20060102T150405Z")
	dir = filepath.Clean(dir)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("state: set aside %s: %w", dir, err)
	}
	sibling, err := freeName(dir + ".damaged-" + stamp)
	if err != nil {
		return "", fmt.Errorf("state: set aside %s: %w", dir, err)
	}
	if err := os.Rename(dir, sibling); err == nil {
		return sibling, nil
	}
	return moveInside(dir, "damaged-"+stamp)
}

// freeName returns path, or path with the first free ".N" suffix.
func freeName(path string) (string, error) {
	for i := 0; i < 1000; i++ {
		p := path
		if i > 0 {
			p += "." + strconv.Itoa(i)
		}
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no free name like %s", path)
}

// moveInside moves every entry of dir, except earlier set-aside stores,
// into a new subdirectory name of dir.
func moveInside(dir, name string) (string, error) {
	sub, err := freeName(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("state: set aside %s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("state: set aside %s: %w", dir, err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		return "", fmt.Errorf("state: set aside %s: %w", dir, err)
	}
	for _, e := range ents {
		if e.IsDir() && isAsideName(e.Name()) {
			continue
		}
		if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(sub, e.Name())); err != nil {
			return "", fmt.Errorf("state: set aside %s: move %s into %s: %w", dir, e.Name(), sub, err)
		}
	}
	return sub, nil
}

func isAsideName(name string) bool {
	const p = "damaged-"
	return len(name) > len(p) && name[:len(p)] == p
}
