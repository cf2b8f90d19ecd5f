package discovery

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseDependency(t *testing.T) {
	ofd := func(rhs string, ctx ...string) Dependency {
		return Dependency{Kind: KindOFD, Context: append([]string{}, ctx...), RHS: rhs}
	}
	oc := func(l, r string, pol Polarity, ctx ...string) Dependency {
		return Dependency{Kind: KindOC, Context: append([]string{}, ctx...), Left: l, Right: r, Polarity: pol}
	}
	tests := []struct {
		in   string
		want Dependency
	}{
		{"A ~ B", oc("A", "B", Asc)},
		{"A~B", oc("A", "B", Asc)},
		{"A ~ B desc", oc("A", "B", Desc)},
		{"A ~ B DESC", oc("A", "B", Desc)},
		{"A ~ B asc", oc("A", "B", Asc)},
		{"A ~ B (desc)", oc("A", "B", Desc)},
		{"A ~ B(desc)", oc("A", "B", Desc)},
		{"{X,Y}: A ~ B", oc("A", "B", Asc, "X", "Y")},
		{" { X , Y } : A ~ B desc ", oc("A", "B", Desc, "X", "Y")},
		{"{}: sal ~ tax (asc)", oc("sal", "tax", Asc)},
		{"{X}: [] -> A", ofd("A", "X")},
		{"{zip}: [] -> city", ofd("city", "zip")},
		{"{}: [] -> A", ofd("A")},
		{"[] -> A", ofd("A")},
		{"{Miles per Gallon, a.b}: [] -> Weight in lbs", ofd("Weight in lbs", "Miles per Gallon", "a.b")},
		{`{"a,b","x\"y"}: "c~d" ~ "e" desc`, oc("c~d", "e", Desc, "a,b", `x"y`)},
		{`{}: [] -> "->"`, ofd("->")},
		{"price-tax ~ b", oc("price-tax", "b", Asc)},
		{"[A,B] -> [C]", Dependency{Kind: KindListOD, LHSList: []string{"A", "B"}, RHSList: []string{"C"}}},
		{"[ A ] -> [ C , D ]", Dependency{Kind: KindListOD, LHSList: []string{"A"}, RHSList: []string{"C", "D"}}},
		{"[] -> []", Dependency{Kind: KindListOD, LHSList: []string{}, RHSList: []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDependency(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
			again, err := ParseDependency(got.String())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("String() %q re-parses to %#v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseDependencyErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "expected a column name"},
		{"A", "expected '~' after \"A\""},
		{"A -> B", "expected '~'"},
		{"A ~", "expected a column name after '~'"},
		{"A ~ B sideways", ""}, // a name "B sideways": valid
		{"{X: A ~ B", "expected ',' or '}'"},
		{"{X} A ~ B", "expected ':'"},
		{"{X}: [] A", "expected '->'"},
		{"{X}: [A] -> B", "expected '[]'"},
		{"[A] -> B", "expected '['"},
		{"[A] -> [B] x", "unexpected"},
		{`"A ~ B`, "unterminated"},
		{`"A\n" ~ B`, "escapes"},
		{`"A" ~ "B" sideways`, "expected asc or desc"},
		{"A ~ B ~ C", "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseDependency(tt.in)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, errSyntax) {
				t.Errorf("error %v does not wrap errSyntax", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestStringQuotesNames(t *testing.T) {
	d := Dependency{Kind: KindOC, Context: []string{"a:b", " sp"}, Left: "x desc", Right: `q"\`, Polarity: Desc}
	want := `{"a:b"," sp"}: "x desc" ~ "q\"\\" (desc)`
	if got := d.String(); got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	plain := Dependency{Kind: KindOFD, Context: []string{"zip"}, RHS: "city"}
	if got := plain.String(); got != "{zip}: [] -> city" {
		t.Errorf("String() = %s", got)
	}
}

func FuzzParseDependency(f *testing.F) {
	for _, s := range []string{
		"A ~ B", "A ~ B desc", "{X,Y}: A ~ B", "{X}: [] -> A", "{}: [] -> A", "[] -> A",
		"[A,B] -> [C]", `{"a,b"}: "x" ~ y (desc)`, "{}: sal ~ tax (asc)", "a b(asc)", `"\\" ~ x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDependency(s)
		if err != nil {
			return
		}
		text := d.String()
		again, err := ParseDependency(text)
		if err != nil {
			t.Fatalf("%q parsed, its String() %q does not: %v", s, text, err)
		}
		if !reflect.DeepEqual(again, d) {
			t.Fatalf("%q -> %#v -> %q -> %#v", s, d, text, again)
		}
	})
}
