package decode

import "testing"

func TestColumnSelector(t *testing.T) {
	tests := []struct {
		include, exclude []string
		keep, drop       []string
	}{
		{nil, nil, []string{"a", "a.b", ""}, nil},
		{[]string{"a"}, nil, []string{"a"}, []string{"a.b", "ab", "b"}},
		{[]string{"a.*"}, nil, []string{"a.b", "a.b.c"}, []string{"a", "ab"}},
		{[]string{"a*"}, nil, []string{"a", "ab", "a.b"}, []string{"b"}},
		{[]string{"*"}, []string{"secret"}, []string{"a", "x.y"}, []string{"secret"}},
		{nil, []string{"user.*", "id"}, []string{"user", "ids", "x"}, []string{"user.name", "id"}},
		{[]string{"user.*"}, []string{"user.pw"}, []string{"user.name"}, []string{"user.pw", "other"}},
	}
	for _, tt := range tests {
		s, err := newColumnSelector(tt.include, tt.exclude)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range tt.keep {
			if !s.keep([]byte(n)) {
				t.Errorf("include %v exclude %v: %q dropped", tt.include, tt.exclude, n)
			}
		}
		for _, n := range tt.drop {
			if s.keep([]byte(n)) {
				t.Errorf("include %v exclude %v: %q kept", tt.include, tt.exclude, n)
			}
		}
	}
}

func TestColumnSelectorDoesNotAllocate(t *testing.T) {
	s, err := newColumnSelector([]string{"a", "user.*"}, []string{"user.pw"})
	if err != nil {
		t.Fatal(err)
	}
	names := [][]byte{[]byte("a"), []byte("user.name"), []byte("user.pw"), []byte("zzz")}
	if allocs := testing.AllocsPerRun(100, func() {
		for _, n := range names {
			s.keep(n)
		}
	}); allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}
