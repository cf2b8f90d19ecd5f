package decode

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"testing"
)

func TestFlatRecordBinaryRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		fields []testField
		ign    int
	}{
		{"empty", nil, 0},
		{"scalars", []testField{{"a", "1", false}, {"b.c", "héllo", false}, {"d", "", true}, {"e", "", false}}, 3},
		{"long value", []testField{{"x", string(bytes.Repeat([]byte("v"), 1000)), false}}, 0},
		{"long name", []testField{{string(bytes.Repeat([]byte("n"), 128)), "1", false}, {string(bytes.Repeat([]byte("m"), 127)), "", true}}, 200},
		{"binary", []testField{{"\x00\xff", "\x00\x01\x80", false}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r FlatRecord
			for _, f := range tt.fields {
				r.Add([]byte(f.name), []byte(f.value), f.null)
			}
			r.addIgnored(tt.ign)
			enc := r.AppendBinary(nil)
			if want := layoutOf(tt.fields, tt.ign); !bytes.Equal(enc, want) {
				t.Fatalf("encoding: got %x want %x", enc, want)
			}
			var viaString FlatRecord
			for _, f := range tt.fields {
				if f.null {
					viaString.Add([]byte(f.name), nil, true)
				} else {
					viaString.AddString(f.name, f.value)
				}
			}
			viaString.addIgnored(tt.ign)
			if got := viaString.AppendBinary(nil); !bytes.Equal(got, enc) {
				t.Fatalf("AddString's encoding %x, Add's %x", got, enc)
			}
			var back FlatRecord
			back.AddString("stale", "x") // UnmarshalBinary must reset
			if err := back.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			for i := range enc {
				enc[i] = 0xAA // the decoded record must not alias the input
			}
			if got := recordFields(&back); !slices.Equal(got, tt.fields) {
				t.Fatalf("round trip: got %v want %v", got, tt.fields)
			}
			if back.ignored != tt.ign {
				t.Fatalf("ignored: got %d want %d", back.ignored, tt.ign)
			}
		})
	}
}

// layoutOf encodes fields as the binary layout of record.go's doc says,
// field by field: the oracle of AppendBinary, which copies the record's
// buffer instead.
func layoutOf(fields []testField, ignored int) []byte {
	b := []byte{binaryVersion}
	b = binary.AppendUvarint(b, uint64(ignored))
	b = binary.AppendUvarint(b, uint64(len(fields)))
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f.name)))
		b = append(b, f.name...)
		if f.null {
			b = append(b, 1)
			continue
		}
		b = append(b, 0)
		b = binary.AppendUvarint(b, uint64(len(f.value)))
		b = append(b, f.value...)
	}
	return b
}

func TestFlatRecordUnmarshalRejects(t *testing.T) {
	var r FlatRecord
	r.AddString("a", "b")
	good := r.AppendBinary(nil)
	bad := [][]byte{
		nil,
		{2},
		good[:len(good)-1],
		append(append([]byte{}, good...), 0),
		{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for i, b := range bad {
		if err := r.UnmarshalBinary(b); err == nil {
			t.Errorf("case %d: %x accepted", i, b)
		}
		if r.Len() != 0 {
			t.Errorf("case %d: record not reset after error", i)
		}
	}
}

func TestFlatRecordReuseDoesNotAllocate(t *testing.T) {
	var r FlatRecord
	name, value := []byte("field.name"), []byte("some value")
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset()
		for range 8 {
			r.Add(name, value, false)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per record", allocs)
	}
}

func FuzzFlatRecordBinary(f *testing.F) {
	var r FlatRecord
	r.AddString("a", "1")
	r.Add([]byte("b"), nil, true)
	r.addIgnored(2)
	f.Add(r.AppendBinary(nil))
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r FlatRecord
		if err := r.UnmarshalBinary(b); err != nil {
			return
		}
		// Whatever decodes must re-encode to a record that decodes the same.
		enc := r.AppendBinary(nil)
		var back FlatRecord
		if err := back.UnmarshalBinary(enc); err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if !slices.Equal(recordFields(&back), recordFields(&r)) || back.ignored != r.ignored {
			t.Fatal("re-encoding changed the record")
		}
	})
}

// testField is a field as tests write it.
type testField struct {
	name, value string
	null        bool
}

func recordFields(r *FlatRecord) []testField {
	var out []testField
	for i := range r.Len() {
		n, v, null := r.Field(i)
		out = append(out, testField{string(n), string(v), null})
	}
	return out
}

func formatFloatForTest(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
