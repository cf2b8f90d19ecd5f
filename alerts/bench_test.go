package alerts

import (
	"fmt"
	"testing"

	"github.com/odwatch/odwatch/discovery"
)

// BenchmarkObserve1000 measures one window with 1000 tracked dependencies
// (the default cap), all re-validated.
func BenchmarkObserve1000(b *testing.B) {
	obs := make([]Observation, 1000)
	for i := range obs {
		obs[i] = Observation{Dependency: discovery.Dependency{Kind: discovery.KindOFD, Context: []string{fmt.Sprint("c", i)}, RHS: "x"}, Minimal: true}
	}
	tr := NewTracker(Config{Epsilon: 0.1})
	tr.Observe(testWindow(1), obs)
	b.ResetTimer()
	for i := range b.N {
		tr.Observe(testWindow(i+2), obs)
	}
}

func BenchmarkMarshal1000(b *testing.B) {
	obs := make([]Observation, 1000)
	for i := range obs {
		obs[i] = Observation{Dependency: discovery.Dependency{Kind: discovery.KindOFD, Context: []string{fmt.Sprint("c", i)}, RHS: "x"}, Minimal: true}
	}
	tr := NewTracker(Config{Epsilon: 0.1})
	tr.Observe(testWindow(1), obs)
	b.ResetTimer()
	for range b.N {
		if _, err := tr.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}
