package alerts

import (
	"maps"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/odwatch/odwatch/discovery"
)

// depSeries returns the dependency names (testDeps keys) that have a series
// of family name for stream payroll, with their values.
func depSeries(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for labels, v := range series(t, reg, name) {
		for n, d := range testDeps {
			if labels == d.String()+"|payroll" {
				out[n] = v
			}
		}
	}
	return out
}

// TestMetricsViolatedFollowsHysteresis: odwatch_dependency_violated changes
// exactly when the tracker emits violated and restored (K windows beyond
// eps ± margin), not when the error crosses eps; it has the same series as
// odwatch_dependency_error.
func TestMetricsViolatedFollowsHysteresis(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	tr := NewTracker(Config{Stream: "payroll", Epsilon: 0.1, Margin: 0.05, K: 2})
	steps := []struct {
		name      string
		a         float64 // error of A; B stays at 0.02
		wantEvent string  // event for A, if any
		wantA     float64 // odwatch_dependency_violated of A
	}{
		{"found", 0.01, "discovered:A", 0},
		{"above eps inside the band", 0.12, "", 0},
		{"back below eps", 0.09, "", 0},
		{"above eps+margin once", 0.2, "", 0},
		{"above eps+margin twice", 0.2, "violated:A", 1},
		{"inside the band", 0.08, "", 1},
		{"at eps-margin once", 0.05, "", 1},
		{"at eps-margin twice", 0.01, "restored:A", 0},
	}
	for i, st := range steps {
		evs := tr.Observe(testWindow(i+1), testObs(map[string]o{"A": {st.a, true}, "B": {0.02, true}}))
		var gotEvent string
		for _, s := range summary(evs) {
			if s != "discovered:B" {
				gotEvent = s
			}
		}
		m.UpdateTracker("payroll", tr)
		if gotEvent != st.wantEvent {
			t.Fatalf("step %d (%s): event %q, want %q", i+1, st.name, gotEvent, st.wantEvent)
		}
		violated := depSeries(t, reg, "odwatch_dependency_violated")
		if want := map[string]float64{"A": st.wantA, "B": 0}; !maps.Equal(violated, want) {
			t.Errorf("step %d (%s): violated series %v, want %v", i+1, st.name, violated, want)
		}
		errs := depSeries(t, reg, "odwatch_dependency_error")
		if errs["A"] != st.a {
			t.Errorf("step %d (%s): error of A %v, want %v", i+1, st.name, errs["A"], st.a)
		}
		if !slices.Equal(slices.Sorted(maps.Keys(errs)), slices.Sorted(maps.Keys(violated))) {
			t.Errorf("step %d (%s): error series %v, violated series %v: want the same dependencies", i+1, st.name, errs, violated)
		}
	}
	if v := gauge(t, reg, "odwatch_margin", "payroll"); v != 0.05 {
		t.Errorf("odwatch_margin = %v, want 0.05", v)
	}
}

// TestMetricsSeriesSet: the violated gauge covers the capped set of the
// error gauge (violated first, then highest error; never-measured pinned
// dependencies have neither), and both series go when a dependency leaves
// the cap or is retired.
func TestMetricsSeriesSet(t *testing.T) {
	type step struct {
		obs          map[string]o
		wantError    map[string]float64
		wantViolated map[string]float64
	}
	tests := []struct {
		name  string
		cfg   Config
		max   int
		steps []step
	}{
		{
			name: "cap keeps violated first, then highest error",
			cfg:  Config{Epsilon: 0.1, K: 1, RetireAfter: 5},
			max:  2,
			steps: []step{
				{obs: map[string]o{"A": {0.01, true}, "B": {0.02, true}, "C": {0.03, true}},
					wantError:    map[string]float64{"B": 0.02, "C": 0.03},
					wantViolated: map[string]float64{"B": 0, "C": 0}},
				// A violated: it enters, B (lowest error) leaves both families.
				{obs: map[string]o{"A": {0.5, true}, "B": {0.02, true}, "C": {0.03, true}},
					wantError:    map[string]float64{"A": 0.5, "C": 0.03},
					wantViolated: map[string]float64{"A": 1, "C": 0}},
				// A restored, B now highest: A leaves.
				{obs: map[string]o{"A": {0.0, true}, "B": {0.06, true}, "C": {0.03, true}},
					wantError:    map[string]float64{"B": 0.06, "C": 0.03},
					wantViolated: map[string]float64{"B": 0, "C": 0}},
			},
		},
		{
			name: "retired dependency loses both series",
			cfg:  Config{Epsilon: 0.1, K: 1, RetireAfter: 1},
			steps: []step{
				{obs: map[string]o{"A": {0.01, true}, "B": {0.02, true}},
					wantError:    map[string]float64{"A": 0.01, "B": 0.02},
					wantViolated: map[string]float64{"A": 0, "B": 0}},
				// B holds without being minimal: retired.
				{obs: map[string]o{"A": {0.01, true}, "B": {0.02, false}},
					wantError:    map[string]float64{"A": 0.01},
					wantViolated: map[string]float64{"A": 0}},
			},
		},
		{
			name: "pinned dependency has series only once measured",
			cfg:  Config{Epsilon: 0.1, K: 1, Pinned: []discovery.Dependency{testDeps["D"]}},
			steps: []step{
				{obs: map[string]o{"A": {0.01, true}},
					wantError:    map[string]float64{"A": 0.01},
					wantViolated: map[string]float64{"A": 0}},
				{obs: map[string]o{"A": {0.01, true}, "D": {0.3, false}},
					wantError:    map[string]float64{"A": 0.01, "D": 0.3},
					wantViolated: map[string]float64{"A": 0, "D": 1}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			m.MaxErrorSeries = tc.max
			tc.cfg.Stream = "payroll"
			tr := NewTracker(tc.cfg)
			m.UpdateTracker("payroll", tr)
			if n := len(series(t, reg, "odwatch_dependency_error")) + len(series(t, reg, "odwatch_dependency_violated")); n != 0 {
				t.Errorf("%d dependency series before any window, want 0", n)
			}
			for i, st := range tc.steps {
				tr.Observe(testWindow(i+1), testObs(st.obs))
				m.UpdateTracker("payroll", tr)
				if got := depSeries(t, reg, "odwatch_dependency_error"); !maps.Equal(got, st.wantError) {
					t.Errorf("step %d: error series %v, want %v", i+1, got, st.wantError)
				}
				if got := depSeries(t, reg, "odwatch_dependency_violated"); !maps.Equal(got, st.wantViolated) {
					t.Errorf("step %d: violated series %v, want %v", i+1, got, st.wantViolated)
				}
			}
			if v := gauge(t, reg, "odwatch_margin", "payroll"); v != 0 {
				t.Errorf("odwatch_margin = %v, want 0", v)
			}
		})
	}
}

// TestMetricsSharedCollectors: a Metrics created later on the same registry
// (a restarted monitor) replaces the series an earlier one left for the
// stream, and leaves other streams alone.
func TestMetricsSharedCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	old := NewMetrics(reg)
	trOld := NewTracker(Config{Stream: "payroll", Epsilon: 0.1, K: 1})
	trOld.Observe(testWindow(1), testObs(map[string]o{"A": {0.01, true}, "B": {0.05, true}}))
	old.UpdateTracker("payroll", trOld)
	old.UpdateTracker("orders", trOld)

	m := NewMetrics(reg)
	tr := NewTracker(Config{Stream: "payroll", Epsilon: 0.1, Margin: 0.02, K: 1})
	tr.Observe(testWindow(1), testObs(map[string]o{"C": {0.03, true}}))
	m.UpdateTracker("payroll", tr)
	if got, want := depSeries(t, reg, "odwatch_dependency_violated"), map[string]float64{"C": 0}; !maps.Equal(got, want) {
		t.Errorf("violated series of payroll %v, want %v", got, want)
	}
	if got, want := depSeries(t, reg, "odwatch_dependency_error"), map[string]float64{"C": 0.03}; !maps.Equal(got, want) {
		t.Errorf("error series of payroll %v, want %v", got, want)
	}
	if v := gauge(t, reg, "odwatch_dependency_violated", testDeps["B"].String(), "orders"); v != 0 {
		t.Errorf("violated of B in orders %v, want 0 (B held when discovered; other streams untouched)", v)
	}
	if v := gauge(t, reg, "odwatch_margin", "payroll"); v != 0.02 {
		t.Errorf("odwatch_margin = %v, want 0.02", v)
	}
}
