package deptext

import (
	"math/rand/v2"
	"testing"
)

// TestFormatNameReadsBack: every name FormatName writes, Scanner.Name reads
// back whole, in a list and before an arrow; names that could be misread
// are quoted.
func TestFormatNameReadsBack(t *testing.T) {
	names := []string{"a", "Miles per Gallon", "a.b", "price-tax", "", " x", "x ", `x"y`, `a\b`, "a,b", "c~d",
		"->", "a->b", "{x}", "[y]", "k:v", "col asc", "col DESC", "f(x)", "a<", "<->", "é ü"}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab ,{}:~[]\"\\-><()cdes\t"
	for range 2000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	for _, n := range names {
		text := FormatName(n)
		p := NewScanner(text + " -> z")
		got, err := p.Name()
		if err != nil || got != n {
			t.Fatalf("%q written %q reads back %q, %v", n, text, got, err)
		}
		if err := p.Arrow("after the name"); err != nil {
			t.Fatalf("%q written %q: %v", n, text, err)
		}
		if needsQuote(n) != (text != n) {
			t.Errorf("%q written %q: quoted %v", n, text, text != n)
		}
		list := NewScanner("{" + FormatNames([]string{n, "b", n}) + "}")
		ns, err := list.List('{', '}')
		if err != nil || len(ns) != 3 || ns[0] != n || ns[2] != n || list.End() != nil {
			t.Fatalf("list of %q: %q, %v", n, ns, err)
		}
	}
}
