package testkit

import (
	"os"
	"testing"
)

func TestSharedDataSkipsWhenAbsent(t *testing.T) {
	t.Parallel()
	var reached bool
	t.Run("absent", func(t *testing.T) {
		SharedData(t, "no-such-dataset.csv")
		reached = true
	})
	if reached {
		t.Fatal("SharedData returned for an absent dataset instead of skipping")
	}
}

func TestSharedDataFindsTheModulesNeighbour(t *testing.T) {
	t.Parallel()
	path := SharedData(t, "cars.csv")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}
