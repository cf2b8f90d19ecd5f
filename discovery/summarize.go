package discovery

import (
	"context"
	"slices"

	"github.com/odwatch/odwatch/discovery/table"
)

// Summarize states each fact of d's reliable listing once (docs/DESIGN.md,
// "Keys, equivalences and implied rules"), d being Discover's result on t
// with opts:
//
//   - keys: the reliable minimal keys of at most maxKeyColumns columns
//     (MaxLevel, when smaller) are added, the columns that are keys on
//     their own as one entry naming the others as Equivalents; every
//     dependency whose context holds a key names it in ImpliedBy and is
//     not reliable;
//   - equivalences: columns whose reliable FDs determine each other are
//     added as one equivalence; a reliable rule restated with another
//     member of an equivalence is not reliable and names the one kept,
//     which names the other members as Equivalents; a rule within one
//     equivalence names it;
//   - orders by a key, empty sides and measurements (summarize_evidence.go):
//     a reliable OC one of whose sides with its context holds a key names
//     the key; a reliable rule onto a column empty within eps names
//     {}: [] -> A; a reliable rule whose context holds a measurement is
//     not reliable;
//   - triangles: of X,A,B -> C, X,A,C -> B and X,B,C -> A, all reliable,
//     the other two name the strongest;
//   - mirrors: X,A -> B and X,B -> A, both reliable with X not empty, are
//     one equivalence {X}: A <-> B, which both name;
//   - implied: a reliable X -> B that follows from reliable X -> A and Y ->
//     B with A in Y and Y within X and A names them;
//   - together (summarize_merge.go): the reliable FDs of one left-hand
//     side, with the OCs that make them order dependencies, are stated as
//     the strongest of them, which names the others in With; they name it
//     in StatedIn and are not reliable on their own.
//
// The entries that step back keep their measures, so --all still lists
// every minimal dependency. With MinStrength 0 (every dependency reliable:
// the paper's set) Summarize changes nothing.
func Summarize(ctx context.Context, t *table.Table, d *Discovery, opts Options) error {
	if opts.MinStrength <= 0 || t.Rows == 0 || len(t.Columns) > 64 {
		return nil
	}
	tune := opts.listing()
	maxColumns := tune.maxKeyColumns
	if opts.MaxLevel > 0 {
		maxColumns = min(maxColumns, opts.MaxLevel)
	}
	keys, err := findKeys(ctx, t, opts.Epsilon, maxColumns, opts.MinStrength, tune, opts.Pause)
	if err != nil {
		return err
	}
	s := &summary{ctx: ctx, t: t, d: d, opts: opts, index: map[string]int{}}
	for i := len(t.Columns) - 1; i >= 0; i-- {
		s.index[t.Columns[i].Name] = i
	}
	// d is in Discover's order, which only an added entry or a reliable
	// one stepping back changes (Summarize changes no text, strength or
	// score): without either the sort, which renders the texts of the
	// entries whose keys tie (a tenth of a second on hepatitis' 170k), is
	// skipped.
	entries, reliable := len(d.Dependencies), reliableEntries(d.Dependencies)
	s.addKeys(keys)
	s.stepBackKeyOrders()
	s.stepBackEmptySides()
	s.stepBackMeasurements()
	if err := s.addEquivalences(); err != nil {
		return err
	}
	s.stepBackTriangles()
	if err := s.addMirrorEquivalences(); err != nil {
		return err
	}
	s.stepBackImplied()
	s.stateTogether()
	if len(d.Dependencies) != entries || !slices.Equal(reliableEntries(d.Dependencies), reliable) {
		sortResults(d.Dependencies)
	}
	return nil
}

// reliableEntries returns the indexes of the reliable entries of rs.
func reliableEntries(rs []Result) []int {
	var out []int
	for i := range rs {
		if rs[i].Reliable {
			out = append(out, i)
		}
	}
	return out
}

// summary is the state of one Summarize call.
type summary struct {
	ctx   context.Context
	t     *table.Table
	d     *Discovery
	opts  Options
	index map[string]int
	// rep maps a column to the representative of its equivalence.
	rep []int
}

func (s *summary) names(cols []int) []string {
	out := make([]string, 0, len(cols))
	for _, c := range cols {
		out = append(out, s.t.Columns[c].Name)
	}
	return out
}

// set returns the named columns as a bit set.
func (s *summary) set(names ...string) uint64 {
	var x uint64
	for _, n := range names {
		x |= 1 << s.index[n]
	}
	return x
}

// validate is Validate of d on the summary's table, after the pause
// (Options.Pause) when there is one, whose error it returns as it is.
func (s *summary) validate(d Dependency) (Result, error) {
	if s.opts.Pause != nil {
		if err := s.opts.Pause(s.ctx); err != nil {
			return Result{}, err
		}
	}
	return Validate(s.ctx, s.t, d, s.opts)
}

// stepBack marks r as not reliable on its own, following from by.
func stepBack(r *Result, by ...string) {
	r.Reliable = false
	r.ImpliedBy = append(r.ImpliedBy, by...)
}

// addKeys adds the reliable keys, the one-column ones as one entry, and
// steps back what their contexts hold.
func (s *summary) addKeys(keys []foundKey) {
	// The exact keys first, so that one represents the one-column keys.
	slices.SortStableFunc(keys, func(x, y foundKey) int {
		if len(x.Cols) != len(y.Cols) {
			return len(x.Cols) - len(y.Cols)
		}
		if x.Removals != y.Removals {
			return x.Removals - y.Removals
		}
		return slices.Compare(x.Cols, y.Cols)
	})
	var added []Result
	var single *Result
	for _, k := range keys { // each reliable (findKeys)
		r := Result{Dependency: Dependency{Kind: KindKey, Context: []string{}, Set: s.names(k.Cols)},
			Removals: k.Removals, Error: float64(k.Removals) / float64(s.t.Rows), Score: k.Score,
			Strength: k.Strength, Reliable: true}
		if len(k.Cols) == 1 && single != nil {
			single.Equivalents = append(single.Equivalents, r.Set...)
			continue
		}
		added = append(added, r)
		if len(k.Cols) == 1 {
			single = &added[len(added)-1]
		}
	}
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		ctx := s.set(r.Context...)
		for _, k := range added {
			if s.holdsKey(ctx, k) {
				stepBack(r, k.String())
				break
			}
		}
	}
	s.d.Dependencies = append(s.d.Dependencies, added...)
}

// holdsKey reports whether the context ctx holds the key k: all its
// columns, or for the one-column keys' entry any one of them.
func (s *summary) holdsKey(ctx uint64, k Result) bool {
	if len(k.Set) > 1 {
		x := s.set(k.Set...)
		return ctx&x == x
	}
	return ctx&s.set(append(k.Equivalents, k.Set...)...) != 0
}

// reliableOFD returns the index of the reliable OFD ctx -> rhs, or -1.
func (s *summary) reliableOFD(ctx uint64, rhs int) int {
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if r.Kind == KindOFD && r.Reliable && s.index[r.RHS] == rhs && s.set(r.Context...) == ctx {
			return i
		}
	}
	return -1
}

// mutualFDs returns the pairs of columns whose one-column reliable FDs
// determine each other.
func (s *summary) mutualFDs() (pairs [][2]int) {
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if r.Kind != KindOFD || !r.Reliable || len(r.Context) != 1 {
			continue
		}
		a, b := s.index[r.Context[0]], s.index[r.RHS]
		if a < b {
			if s.reliableOFD(1<<b, a) >= 0 {
				pairs = append(pairs, [2]int{a, b})
			}
		}
	}
	return pairs
}

// addEquivalences adds the equivalences of the one-column reliable FDs
// that determine each other and states the rules on them once.
func (s *summary) addEquivalences() error {
	m := len(s.t.Columns)
	s.rep = make([]int, m)
	for c := range s.rep {
		s.rep[c] = c
	}
	find := func(c int) int {
		for s.rep[c] != c {
			c = s.rep[c]
		}
		return c
	}
	pairs := s.mutualFDs()
	for _, p := range pairs {
		a, b := find(p[0]), find(p[1])
		s.rep[max(a, b)] = min(a, b)
	}
	for c := range s.rep {
		s.rep[c] = find(c)
	}
	eqs, err := s.equivalenceEntries()
	if err != nil {
		return err
	}
	texts := map[int]string{}
	for _, e := range eqs {
		texts[s.index[e.Set[0]]] = e.String()
	}
	s.joinSingleKeys(texts)
	if len(texts) == 0 {
		return nil
	}
	s.restate(texts)
	s.d.Dependencies = append(s.d.Dependencies, eqs...)
	return nil
}

// joinSingleKeys makes the one-column keys one more equivalence, stated
// by their key entry (each identifies a record, so each determines the
// others): a rule between two of them names the key, and a rule on one of
// them is stated with the key's column.
func (s *summary) joinSingleKeys(texts map[int]string) {
	for _, r := range s.d.Dependencies {
		if r.Kind != KindKey || len(r.Set) != 1 || len(r.Equivalents) == 0 {
			continue
		}
		rep := s.index[r.Set[0]]
		for _, e := range r.Equivalents {
			s.rep[s.index[e]] = rep
		}
		texts[rep] = r.String()
		return
	}
}

// equivalenceEntries returns one entry per equivalence of s.rep, measured
// as Validate measures it.
func (s *summary) equivalenceEntries() ([]Result, error) {
	var out []Result
	for rep := range s.rep {
		var members []int
		for c := range s.rep {
			if s.rep[c] == rep {
				members = append(members, c)
			}
		}
		if len(members) < 2 {
			continue
		}
		r, err := s.validate(Dependency{Kind: KindEquivalence, Context: []string{}, Set: s.names(members)})
		if err != nil {
			return nil, err
		}
		r.RemovalSample = nil
		out = append(out, r)
	}
	return out, nil
}

// restate steps back every reliable rule within one equivalence (naming
// it) and every reliable rule that restates another with other members of
// the equivalences (naming the one kept), texts holding each
// equivalence's text by its representative.
func (s *summary) restate(texts map[int]string) {
	kept := map[string]int{}
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if !r.Reliable || (r.Kind != KindOFD && r.Kind != KindOC && r.Kind != KindKey) {
			continue
		}
		canon, within, eqs := s.canonical(r.Dependency, texts)
		if within {
			stepBack(r, eqs...)
			continue
		}
		text := canon.String()
		j, ok := kept[text]
		if !ok || r.String() == text && s.d.Dependencies[j].String() != text {
			if ok {
				stepBack(&s.d.Dependencies[j], r.String())
				s.d.Dependencies[j].Equivalents = nil
			}
			kept[text] = i
			r.Equivalents = s.others(r.Dependency, r.Equivalents)
			continue
		}
		stepBack(r, s.d.Dependencies[j].String())
	}
}

// canonical returns d with every column replaced by its representative,
// whether that leaves it trivial (a rule within an equivalence), and the
// texts of the equivalences it mentions.
func (s *summary) canonical(d Dependency, texts map[int]string) (Dependency, bool, []string) {
	var eqs []string
	rep := func(name string) int {
		r := s.rep[s.index[name]]
		if t, ok := texts[r]; ok && !slices.Contains(eqs, t) {
			eqs = append(eqs, t)
		}
		return r
	}
	var ctx uint64
	for _, n := range d.Context {
		ctx |= 1 << rep(n)
	}
	out := Dependency{Kind: d.Kind, Polarity: d.Polarity, Context: s.names(setColumns(ctx))}
	if d.Kind == KindKey {
		var set uint64
		for _, n := range d.Set {
			set |= 1 << rep(n)
		}
		out.Set = s.names(setColumns(set))
		return out, false, eqs
	}
	if d.Kind == KindOFD {
		a := rep(d.RHS)
		out.RHS = s.t.Columns[a].Name
		return out, ctx&(1<<a) != 0, eqs
	}
	a, b := rep(d.Left), rep(d.Right)
	a, b = min(a, b), max(a, b)
	out.Left, out.Right = s.t.Columns[a].Name, s.t.Columns[b].Name
	return out, a == b || ctx&(1<<a|1<<b) != 0, eqs
}

// others lists, in table order, the members of the equivalences d
// mentions that d does not mention itself, after those it already names.
func (s *summary) others(d Dependency, named []string) []string {
	var classes, own uint64
	for _, n := range d.Columns() {
		classes |= 1 << s.rep[s.index[n]]
		own |= 1 << s.index[n]
	}
	out := named
	for c, r := range s.rep {
		name := s.t.Columns[c].Name
		if classes&(1<<r) != 0 && own&(1<<c) == 0 && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// setColumns lists the columns of a set, ascending.
func setColumns(x uint64) []int {
	var out []int
	for c := 0; x != 0; c++ {
		if x&1 != 0 {
			out = append(out, c)
		}
		x >>= 1
	}
	return out
}

// stepBackTriangles lists, of three reliable FDs X,A,B: [] -> C,
// X,A,C: [] -> B and X,B,C: [] -> A (within X, any two of A, B and C
// determine the third), the strongest; the other two step back naming it,
// its by-products (flights: {origin,destination}: [] -> distance, routes'
// distances being unique, makes distance and either end name the other).
// Pairs of them are mirrors, which addMirrorEquivalences would state twice
// over, once for each end.
func (s *summary) stepBackTriangles() {
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if r.Kind != KindOFD || !r.Reliable || len(r.Context) < 2 {
			continue
		}
		ctx := s.set(r.Context...)
		all := ctx | 1<<s.index[r.RHS]
		cols := setColumns(ctx)
	pairs:
		for x, a := range cols {
			for _, b := range cols[x+1:] {
				j, k := s.reliableOFD(all&^(1<<b), b), s.reliableOFD(all&^(1<<a), a)
				if j < 0 || k < 0 {
					continue
				}
				fds := []int{i, j, k}
				slices.SortFunc(fds, s.stronger)
				head := s.d.Dependencies[fds[0]].String()
				stepBack(&s.d.Dependencies[fds[1]], head)
				stepBack(&s.d.Dependencies[fds[2]], head)
				break pairs
			}
		}
	}
}

// addMirrorEquivalences states X,A: [] -> B and X,B: [] -> A, both
// reliable with X not empty, as one fact: the equivalence {X}: A <-> B,
// "within each X, A and B determine each other", measured as Validate
// measures it (the weaker FD's strength), which both FDs step back
// naming. Should the entry not be reliable, the weaker FD steps back
// naming the stronger instead.
func (s *summary) addMirrorEquivalences() error {
	type mirror struct {
		ab, ba int    // the FDs X,A -> B and X,B -> A
		ctx    uint64 // X
		a, b   int
	}
	var mirrors []mirror
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if r.Kind != KindOFD || !r.Reliable || len(r.Context) < 2 {
			continue
		}
		b := s.index[r.RHS]
		ctx := s.set(r.Context...)
		for _, a := range setColumns(ctx) {
			if a < b {
				if j := s.reliableOFD(ctx&^(1<<a)|1<<b, a); j >= 0 {
					mirrors = append(mirrors, mirror{i, j, ctx &^ (1 << a), a, b})
				}
			}
		}
	}
	var added []Result
	for _, m := range mirrors {
		ab, ba := &s.d.Dependencies[m.ab], &s.d.Dependencies[m.ba]
		if !ab.Reliable || !ba.Reliable {
			continue // one of them is already stated by another pair's
		}
		eq, err := s.validate(Dependency{Kind: KindEquivalence, Context: s.names(setColumns(m.ctx)), Set: s.names([]int{m.a, m.b})})
		if err != nil {
			return err
		}
		if !eq.Reliable {
			if ba.Strength > ab.Strength || ba.Strength == ab.Strength && ba.String() < ab.String() {
				ab, ba = ba, ab
			}
			stepBack(ba, ab.String())
			continue
		}
		eq.RemovalSample = nil
		stepBack(ab, eq.String())
		stepBack(ba, eq.String())
		added = append(added, eq)
	}
	s.d.Dependencies = append(s.d.Dependencies, added...)
	return nil
}

// stepBackImplied steps back every reliable X -> B that follows from
// reliable X -> A and Y -> B with A in Y and Y within X and A, judged on
// the reliable FDs before any of them steps back.
func (s *summary) stepBackImplied() {
	type fd struct {
		i   int
		ctx uint64
		rhs int
	}
	var fds []fd
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if r.Kind == KindOFD && r.Reliable {
			fds = append(fds, fd{i, s.set(r.Context...), s.index[r.RHS]})
		}
	}
	implicants := func(xb fd) (int, int, bool) {
		for _, xa := range fds {
			if xa.ctx != xb.ctx || xa.rhs == xb.rhs {
				continue
			}
			for _, yb := range fds {
				if yb.rhs == xb.rhs && yb.ctx&(1<<xa.rhs) != 0 && yb.ctx&^(xb.ctx|1<<xa.rhs) == 0 {
					return xa.i, yb.i, true
				}
			}
		}
		return 0, 0, false
	}
	for _, xb := range fds {
		if i, j, ok := implicants(xb); ok {
			stepBack(&s.d.Dependencies[xb.i], s.d.Dependencies[i].String(), s.d.Dependencies[j].String())
		}
	}
}
