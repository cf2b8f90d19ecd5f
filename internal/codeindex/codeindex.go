// Package codeindex maps a column's values to their dictionary codes for
// both the streaming window (stream) and the incremental discovery
// (discovery), which keep the same kind of dictionary: values in a slice,
// code c standing for vals[c-1], codes freed as the window slides.
//
// The index is an open-addressing hash table with linear probing whose slots
// hold only the code and 32 hash bits; the value itself is read from the
// caller's dictionary. Why not a Go map: over a sliding window every value
// is eventually deleted, and Go's maps keep deleted slots as tombstones that
// lengthen probes and trigger growth, so a stream of unique values made a
// map ever larger and slower. Linear probing with backward-shift deletion
// leaves no tombstones; the slots hold no pointers, so the GC does not scan
// them; and a slot costs 8 bytes instead of a map entry's ~24 plus overhead.
package codeindex

import (
	"hash/maphash"
	"unsafe"
)

// Index maps values to codes. The zero value is not ready: use New.
type Index struct {
	seed  maphash.Seed
	slots []slot // power-of-two length, or nil
	n     int
}

type slot struct {
	code uint32 // 0 = empty
	hash uint32
}

// New returns an empty index with its own hash seed.
func New() Index { return Index{seed: maphash.MakeSeed()} }

// Reset empties the index, keeping its seed: hashes taken before stay the
// values' hashes.
func (x *Index) Reset() { x.slots, x.n = nil, 0 }

// Len is the number of codes in the index.
func (x *Index) Len() int { return x.n }

// Lookup returns the code of v in dict (0 if absent) and v's hash, to be
// passed to Insert when v is absent.
func (x *Index) Lookup(dict []string, v string) (code, h uint32) {
	h = x.HashString(v)
	return x.LookupHash(dict, v, h), h
}

// LookupBytes is Lookup for a value held as bytes; it does not allocate.
// A value hashes the same as bytes or as a string. (Lookup's loop is
// repeated here rather than shared: a generic string|[]byte helper would
// risk the conversion in the comparison allocating per record.)
func (x *Index) LookupBytes(dict []string, v []byte) (code, h uint32) {
	h = x.HashBytes(v)
	if x.n == 0 {
		return 0, h
	}
	mask := uint32(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s.code == 0 {
			return 0, h
		}
		if s.hash == h && dict[s.code-1] == string(v) {
			return s.code, h
		}
	}
}

// HashBytes is the hash Lookup and LookupBytes compute for v.
func (x *Index) HashBytes(v []byte) uint32 { return uint32(maphash.Bytes(x.seed, v)) }

// LookupHashed returns the code whose hash is h and for which same(code)
// reports true (0 if none): for a caller that can tell a code's value
// without reading the dictionary (a short value kept beside the code).
func (x *Index) LookupHashed(h uint32, same func(code uint32) bool) uint32 {
	if x.n == 0 {
		return 0
	}
	mask := uint32(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s.code == 0 {
			return 0
		}
		if s.hash == h && same(s.code) {
			return s.code
		}
	}
}

// HashString is the hash Lookup takes of v, for a caller that hashes
// values ahead of their lookups (LookupHash) to Touch their slots.
func (x *Index) HashString(v string) uint32 { return uint32(maphash.String(x.seed, v)) }

// LookupHash is Lookup for a value whose hash h (HashString) the caller
// took.
func (x *Index) LookupHash(dict []string, v string, h uint32) uint32 {
	if x.n == 0 {
		return 0
	}
	mask := uint32(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s.code == 0 {
			return 0
		}
		if s.hash == h && dict[s.code-1] == v {
			return s.code
		}
	}
}

// Insert adds code, whose value is not in the index, with the hash h that
// Lookup returned for it.
func (x *Index) Insert(code, h uint32) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
	}
	mask := uint32(len(x.slots) - 1)
	i := h & mask
	for x.slots[i].code != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = slot{code: code, hash: h}
	x.n++
}

// minSlots is the table's length when it first grows.
const minSlots = 16

func (x *Index) grow() {
	old := x.slots
	x.slots = make([]slot, max(2*len(old), minSlots))
	mask := uint32(len(x.slots) - 1)
	for _, s := range old {
		if s.code == 0 {
			continue
		}
		i := s.hash & mask
		for x.slots[i].code != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
	}
}

// Remove deletes code, whose value is v, shifting later entries of its
// probe run back so that no tombstone is left. A code not in the index is
// ignored.
func (x *Index) Remove(code uint32, v string) {
	if x.n == 0 {
		return
	}
	x.RemoveHashed(code, uint32(maphash.String(x.seed, v)))
}

// RemoveHashed is Remove for a caller that kept the hash h Lookup returned
// for code's value when it was inserted: it does not hash the value again.
func (x *Index) RemoveHashed(code, h uint32) {
	if x.n == 0 {
		return
	}
	mask := uint32(len(x.slots) - 1)
	i := h & mask
	for x.slots[i].code != code {
		if x.slots[i].code == 0 {
			return // not present: nothing to do
		}
		i = (i + 1) & mask
	}
	x.n--
	for j := i; ; {
		j = (j + 1) & mask
		s := x.slots[j]
		if s.code == 0 {
			break
		}
		if Stays(i, s.hash&mask, j) {
			continue
		}
		x.slots[i] = s
		i = j
	}
	x.slots[i] = slot{}
}

// Stays reports whether, in a table with linear probing whose hole at
// slot i a backward-shift deletion is closing, the entry at slot j with
// home slot home must stay: its home lies cyclically in (i, j], so that
// moving it to i would put it before its home. Otherwise it moves to i
// and j becomes the hole.
func Stays[T ~int | ~uint32](i, home, j T) bool {
	if i <= j {
		return i < home && home <= j
	}
	return i < home || home <= j
}

// Touch starts loading the slot where a lookup or a removal of hash h
// starts, without waiting for it: a caller with several lookups to make
// touches their slots first so that their cache misses overlap.
func (x *Index) Touch(h uint32) {
	if len(x.slots) > 0 {
		prefetch(unsafe.Pointer(&x.slots[h&uint32(len(x.slots)-1)]))
	}
}

// TouchAt starts loading the cache line of *p without waiting for it (see
// Touch), for an element of a caller's own arrays.
func TouchAt[T any](p *T) { prefetch(unsafe.Pointer(p)) }
