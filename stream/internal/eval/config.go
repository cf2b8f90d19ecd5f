package eval

import (
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
)

// Config is what an evaluation reads of a stream's configuration (the
// stream's StreamConfig, validated: defaults filled): the names events
// carry, the thresholds of discovery and of the checks, the cadences a
// check's preparation is spread over, and how the window is typed.
type Config struct {
	// Name is the stream's, Topic the records' (events name both).
	Name, Topic string
	// Epsilon and Margin are the tracker's: a check's removal cuts.
	Epsilon, Margin float64
	// MinStrength, MaxLevel and EvaluationTimeout bound discovery.
	MinStrength       float64
	MaxLevel          int
	EvaluationTimeout time.Duration
	// MinScore keeps newly minimal dependencies whose score is below it
	// from the observations; below 0, nearKeyScore of the window.
	MinScore float64
	// Sample is the number of violating records an event carries.
	Sample int
	// Window is the count window's size (a replay's); Every and
	// DiscoverEvery are the cadences of checks and discoveries.
	Window, Every, DiscoverEvery int
	// K, RetireAfter, DiscoverAfter and Pinned are the tracker's
	// (NewTracker).
	K, RetireAfter, DiscoverAfter int
	Pinned                        []discovery.Dependency
	// Typing says how the window's columns are typed and ordered.
	Typing table.Typing
}

// NewTracker is the tracker of a stream configured by cfg.
func NewTracker(cfg *Config) *alerts.Tracker {
	return alerts.NewTracker(alerts.Config{
		Stream:        cfg.Name,
		Epsilon:       cfg.Epsilon,
		Margin:        cfg.Margin,
		K:             cfg.K,
		RetireAfter:   cfg.RetireAfter,
		Pinned:        cfg.Pinned,
		DiscoverAfter: cfg.DiscoverAfter,
	})
}

// nearKeyRecords is the class size below which a context is taken for a
// near key: nearKeyScore.
const nearKeyRecords = 3

// nearKeyScore is the score below which a context of a window of n records
// is close to a key: nearKeyRecords/n. A dependency's score times n is the
// average size of the context class a record is in (sum of |c|^2 / n), so
// below it a record shares its class with fewer than nearKeyRecords-1
// others on average, and a dependency holds in such classes by the
// accident of which few records met. The bound lies between the near-key
// contexts of the benchmark datasets and their smallest genuine ones.
func nearKeyScore(n int) float64 {
	if n <= 0 {
		return 0
	}
	return nearKeyRecords / float64(n)
}

// minScore is the MinScore of a window of n records.
func (c *Config) minScore(n int) float64 {
	if c.MinScore < 0 {
		return nearKeyScore(n)
	}
	return c.MinScore
}

// typingFor is Typing with the ordinal declarations of columns the window
// does not have left out: a field that has not arrived yet is not an error
// (a declared column's value missing from its list still is, and skips the
// evaluation like any encoding error).
func (c *Config) typingFor(cols []table.DictColumn) table.Typing {
	ty := c.Typing
	if len(ty.Ordinal) == 0 {
		return ty
	}
	ty.Ordinal = make(map[string][]string, len(c.Typing.Ordinal))
	for _, col := range cols {
		if list, ok := c.Typing.Ordinal[col.Name]; ok {
			ty.Ordinal[col.Name] = list
		}
	}
	return ty
}
