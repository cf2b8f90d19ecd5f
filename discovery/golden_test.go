package discovery

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/discovery/tableio"
	"github.com/odwatch/odwatch/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenCars pins the JSON output of discovery on the cars data at
// eps 0.05 (stats.seconds zeroed), in the paper's order-text mode with every
// dependency reliable (exactly the minimal set of docs/DESIGN.md) and in the
// default typed mode with DefaultMinStrength. Regenerate after an intended
// change with
//
//	go test ./discovery -run Golden -update
func TestGoldenCars(t *testing.T) {
	for _, tc := range []struct {
		golden      string
		typing      table.Typing
		minStrength float64
	}{
		{"cars-0.05.golden.json", table.Typing{OrderText: true}, 0},
		{"cars-0.05-typed.golden.json", table.Typing{}, DefaultMinStrength},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			f, err := os.Open(testkit.SharedData(t, "cars.csv"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tab, err := tableio.ReadCSV(f, tableio.CSVOptions{Typing: tc.typing})
			if err != nil {
				t.Fatal(err)
			}
			d, err := Discover(context.Background(), tab, Options{Epsilon: 0.05, RemovalSample: 3, MinStrength: tc.minStrength})
			if err != nil {
				t.Fatal(err)
			}
			d.Stats.Seconds = 0
			var got bytes.Buffer
			if err := d.WriteJSON(&got); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (create it with -update)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("discovery on cars.csv at eps 0.05 differs from %s; if intended, run go test ./discovery -run Golden -update\ngot:\n%s", golden, got.String())
			}
		})
	}
}
