package stream

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/window"
)

// TestReplayEquivalenceWithinContext: within each city, state and county
// name each other (a county name recurs in other cities with another
// state), so {city,state}: [] -> county and its mirror are one rule,
// {city}: state <-> county: one discovered event, and when counties go
// wrong one violated event for it, none for the FDs it states.
func TestReplayEquivalenceWithinContext(t *testing.T) {
	t.Parallel()
	const n, fault = 6000, 3000
	r, err := NewReplayer(benchConfig("eq", 2000, 1000, 0.05), nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(21, 3))
	header := []string{"city", "state", "county", "noise"}
	var rec decode.FlatRecord
	byType := map[string][]string{}
	violatedAt := -1
	for i := range n {
		city, state := rng.IntN(20), rng.IntN(5)
		county := (state + city) % 5
		if i >= fault && rng.IntN(10) < 3 {
			county = rng.IntN(5)
		}
		fillRecord(&rec, header, []string{"c" + strconv.Itoa(city), "s" + strconv.Itoa(state), "k" + strconv.Itoa(county), "n" + strconv.Itoa(rng.IntN(50))})
		evs, err := r.Add(context.Background(), window.RowMeta{Offset: int64(i)}, &rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			byType[string(e.Type)] = append(byType[string(e.Type)], e.Dependency.String())
			if e.Type == alerts.EventViolated && violatedAt < 0 {
				violatedAt = i
			}
		}
	}
	t.Logf("events %v, first violated at %d", byType, violatedAt)
	eq := "{city}: state <-> county"
	if got := byType[string(alerts.EventDiscovered)]; len(got) != 1 || got[0] != eq {
		t.Errorf("discovered %q, want only %s (events %v)", got, eq, byType)
	}
	if got := byType[string(alerts.EventViolated)]; len(got) != 1 || got[0] != eq {
		t.Errorf("violated %q, want only %s (events %v)", got, eq, byType)
	}
	// The fault fills the window from record 3000; the checks are every
	// 1000 records.
	if violatedAt < fault || violatedAt >= fault+2000 {
		t.Errorf("violated at record %d, want within 2 checks of %d", violatedAt, fault)
	}
}
