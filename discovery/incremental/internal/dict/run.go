package dict

import "github.com/odwatch/odwatch/internal/codeindex"

// runAhead is how many values ahead of its intern InternCodedRun takes
// each of its steps of loading (see InternCodedRun).
const runAhead = 8

// InternCodedRun interns a run of values given with the caller's codes
// (as InternCoded does, code 0 being NULL): the j-th is ks[j*stride],
// vs[j*stride], for j < n, and its code goes to Codes[(first+j)&mask].
// It interns them in order, as InternCoded one by one would, and before
// each intern it starts loading, without waiting, what later ones read:
// 3*runAhead values ahead the hint of the caller's code, 2*runAhead ahead
// the reference count and string of the code the hint holds, and
// runAhead ahead, for a value whose hint misses, its index slot and its
// number's slot (hashing it and reading its number then). A batch of
// rows reads a column's dictionary at random places, so that each intern
// otherwise waits for its cache misses one after the other. What a step
// found is a guess (earlier interns may change the dictionary): the
// intern decides as InternCoded does, taking only v's hash and number
// from its step, which depend on v alone.
func (c *Column) InternCodedRun(ks []uint32, vs []string, stride, n int, first, mask uint32) {
	var pre [4 * runAhead]prepared
	for j := range n {
		if a := j + 3*runAhead; a < n {
			c.touchHint(ks[a*stride])
		}
		if a := j + 2*runAhead; a < n {
			c.touchCode(ks[a*stride])
		}
		if a := j + runAhead; a < n {
			pre[a%len(pre)] = c.prepare(ks[a*stride], vs[a*stride])
		}
		k, slot := ks[j*stride], (first+uint32(j))&mask
		if k == 0 {
			c.Codes[slot] = 0
			continue
		}
		var p prepared
		if j >= runAhead {
			p = pre[j%len(pre)]
		}
		c.Codes[slot] = c.internCoded(k, vs[j*stride], p)
	}
}

// hinted returns the code caller code k's hint holds (0 for none).
func (c *Column) hinted(k uint32) uint32 {
	if k == 0 || k == NoHint || k > c.tune.HintMax || int(k) > len(c.hint) {
		return 0
	}
	return c.hint[k-1]
}

// touchHint starts loading caller code k's hint.
func (c *Column) touchHint(k uint32) {
	if k != 0 && k != NoHint && k <= c.tune.HintMax && int(k) <= len(c.hint) {
		codeindex.TouchAt(&c.hint[k-1])
	}
}

// touchCode starts loading the reference count and string of the code
// caller code k's hint holds (which Holds and Ref read).
func (c *Column) touchCode(k uint32) {
	if code := c.hinted(k); code != 0 {
		codeindex.TouchAt(&c.refs[code-1])
		codeindex.TouchAt(&c.Vals[code-1])
	}
}

// prepare is InternCodedRun's last step ahead for the value v of caller
// code k: nothing when its hint holds it now, else its hash and number
// bits, with their index and number slots touched.
func (c *Column) prepare(k uint32, v string) prepared {
	if k == 0 {
		return prepared{}
	}
	if code := c.hinted(k); code != 0 && c.Holds(code, v) {
		return prepared{}
	}
	p := prepared{h: c.index.HashString(v), b: numberBits(v), ok: true}
	c.index.Touch(p.h)
	if p.b != 0 {
		c.nums.touch(p.b)
	}
	return p
}

// touch starts loading the index slot where a lookup of k starts.
func (s *idSpace[K]) touch(k K) {
	if len(s.slots) > 0 {
		codeindex.TouchAt(&s.slots[uint32(s.hash(k)>>32)&uint32(len(s.slots)-1)])
	}
}
