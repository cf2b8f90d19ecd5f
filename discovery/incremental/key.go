package incremental

import "slices"

// KeyRemovals is the removals of the key over the named columns on the
// window as of the last Check, as discovery.Validate counts them on the
// window encoded: the rows beyond the first of each value of the columns
// (NULL being one value), values equal by the columns' equality ids (as
// EncodeTyped makes "1" and "1.0" one number). ok is false when a column
// is not the engine's, or rows came or left since the last Check (their
// codes may not be settled). One pass over the window's codes, with no
// state kept between checks but the arrays (a stream tracks few keys).
func (e *Engine) KeyRemovals(names []string) (removals int, ok bool) {
	if len(names) == 0 || e.batchRows > 0 || e.from != e.oldest || e.to != e.oldest+uint32(e.n) {
		return 0, false
	}
	cols := make([]int, len(names))
	for i, name := range names {
		if cols[i], ok = e.colIdx[name]; !ok {
			return 0, false
		}
	}
	// class[k] is row k's class of the columns so far: the first column's
	// equality id, then a dense id of (class, equality id) for each next.
	e.keyClass = slices.Grow(e.keyClass[:0], e.n)[:e.n]
	class := e.keyClass
	first := e.cols[cols[0]]
	for k := range class {
		class[k] = first.Eq(first.Codes[(e.oldest+uint32(k))&e.mask])
	}
	for _, c := range cols[1:] {
		col := e.cols[c]
		ids := make(map[uint64]uint32, e.n)
		for k, x := range class {
			pair := uint64(x)<<32 | uint64(col.Eq(col.Codes[(e.oldest+uint32(k))&e.mask]))
			id, seen := ids[pair]
			if !seen {
				id = uint32(len(ids))
				ids[pair] = id
			}
			class[k] = id
		}
	}
	top := uint32(0)
	for _, x := range class {
		top = max(top, x)
	}
	e.keySeen = slices.Grow(e.keySeen[:0], int(top)+1)[:int(top)+1]
	seen := e.keySeen
	clear(seen)
	for _, x := range class {
		if seen[x] {
			removals++
		}
		seen[x] = true
	}
	return removals, true
}
