package history

import (
	"sync"
	"time"

	"github.com/odwatch/odwatch/alerts"
)

// Board keeps the last evaluation of every stream of a monitor for the
// status page; its zero value is ready. Every stream's evaluator sets its
// own entry, the status page reads them; its lock is a leaf.
type Board struct {
	mu   sync.Mutex
	last map[string]Last
}

// Last is a stream's last evaluation: when it ran (wall clock) and its
// window.
type Last struct {
	At     time.Time
	Window alerts.WindowInfo
}

// Set notes stream's last evaluation.
func (b *Board) Set(stream string, e Last) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = map[string]Last{}
	}
	b.last[stream] = e
}

// Get returns stream's last evaluation, if it had one.
func (b *Board) Get(stream string) (Last, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.last[stream]
	return e, ok
}
