package discovery

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// JSON field layout of a dependency (docs/DESIGN.md, "JSON output"):
//
//	ofd: {"kind":"ofd","context":[...],"rhs":"A"}
//	oc:  {"kind":"oc","context":[...],"left":"A","right":"B","polarity":"asc"}
//	od:  {"kind":"od","lhs":[...],"rhs":[...]}
//
// context is always an array, never null. A Result adds "error",
// "removals", "score", "strength" (null when NoStrength: a table without
// rows), "strength_bound" when the strength is only bounded
// (Result.StrengthBound), "reliable" and, when not empty, "removal_sample".
type ofdJSON struct {
	Kind    string   `json:"kind"`
	Context []string `json:"context"`
	RHS     string   `json:"rhs"`
}

type ocJSON struct {
	Kind     string   `json:"kind"`
	Context  []string `json:"context"`
	Left     string   `json:"left"`
	Right    string   `json:"right"`
	Polarity string   `json:"polarity"`
}

type odJSON struct {
	Kind string   `json:"kind"`
	LHS  []string `json:"lhs"`
	RHS  []string `json:"rhs"`
}

// depJSONIn is the union of the layouts, for decoding.
type depJSONIn struct {
	Kind     string          `json:"kind"`
	Context  []string        `json:"context"`
	RHS      json.RawMessage `json:"rhs"`
	Left     string          `json:"left"`
	Right    string          `json:"right"`
	Polarity string          `json:"polarity"`
	LHS      []string        `json:"lhs"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// MarshalJSON encodes the dependency in the layout of docs/DESIGN.md's output,
// so that the stream's events describe dependencies the same way.
func (d Dependency) MarshalJSON() ([]byte, error) {
	switch d.Kind {
	case KindOFD:
		return json.Marshal(ofdJSON{Kind: "ofd", Context: nonNil(d.Context), RHS: d.RHS})
	case KindOC:
		return json.Marshal(ocJSON{Kind: "oc", Context: nonNil(d.Context), Left: d.Left, Right: d.Right, Polarity: d.Polarity.String()})
	case KindListOD:
		return json.Marshal(odJSON{Kind: "od", LHS: nonNil(d.LHSList), RHS: nonNil(d.RHSList)})
	case KindKey, KindEquivalence:
		return marshalRule(d)
	}
	return nil, fmt.Errorf("%w: kind %d", ErrBadDependency, int(d.Kind))
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (d *Dependency) UnmarshalJSON(data []byte) error {
	if rule, ok, err := unmarshalRule(data); ok || err != nil {
		*d = rule
		return err
	}
	var in depJSONIn
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	out := Dependency{}
	switch in.Kind {
	case "ofd":
		out.Kind = KindOFD
		out.Context = nonNil(in.Context)
		if err := json.Unmarshal(in.RHS, &out.RHS); err != nil {
			return fmt.Errorf("%w: ofd rhs must be a string: %w", ErrBadDependency, err)
		}
	case "oc":
		out.Kind = KindOC
		out.Context = nonNil(in.Context)
		out.Left, out.Right = in.Left, in.Right
		switch in.Polarity {
		case "asc", "":
			out.Polarity = Asc
		case "desc":
			out.Polarity = Desc
		default:
			return fmt.Errorf("%w: polarity %q", ErrBadDependency, in.Polarity)
		}
	case "od":
		out.Kind = KindListOD
		out.LHSList = nonNil(in.LHS)
		if err := json.Unmarshal(in.RHS, &out.RHSList); err != nil {
			return fmt.Errorf("%w: od rhs must be a list: %w", ErrBadDependency, err)
		}
		out.RHSList = nonNil(out.RHSList)
	default:
		return fmt.Errorf("%w: kind %q", ErrBadDependency, in.Kind)
	}
	*d = out
	return nil
}

// resultMetrics are the fields a Result adds to its dependency.
type resultMetrics struct {
	Error         float64  `json:"error"`
	Removals      int      `json:"removals"`
	Score         float64  `json:"score"`
	Strength      *float64 `json:"strength"`
	StrengthBound bool     `json:"strength_bound,omitempty"`
	Reliable      bool     `json:"reliable"`
	RemovalSample []int    `json:"removal_sample,omitempty"`
	Equivalents   []string `json:"equivalents,omitempty"`
	ImpliedBy     []string `json:"implied_by,omitempty"`
	With          []string `json:"with,omitempty"`
	StatedIn      string   `json:"stated_in,omitempty"`
}

// jsonStrength is the JSON value of a Strength: null for NoStrength.
func jsonStrength(s float64) *float64 {
	if s < 0 {
		return nil
	}
	return &s
}

// MarshalJSON encodes the dependency's fields followed by error, removals,
// score and removal_sample. (Without it, Result would inherit Dependency's
// MarshalJSON and lose its metrics.)
func (r Result) MarshalJSON() ([]byte, error) {
	dep, err := r.Dependency.MarshalJSON()
	if err != nil {
		return nil, err
	}
	m, err := json.Marshal(resultMetrics{Error: r.Error, Removals: r.Removals, Score: r.Score,
		Strength: jsonStrength(r.Strength), StrengthBound: r.StrengthBound, Reliable: r.Reliable, RemovalSample: r.RemovalSample,
		Equivalents: r.Equivalents, ImpliedBy: r.ImpliedBy, With: r.With, StatedIn: r.StatedIn})
	if err != nil {
		return nil, err
	}
	// Splice the two objects: {dep...,metrics...}.
	out := make([]byte, 0, len(dep)+len(m))
	out = append(out, dep[:len(dep)-1]...)
	out = append(out, ',')
	return append(out, m[1:]...), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *Result) UnmarshalJSON(data []byte) error {
	var dep Dependency
	if err := dep.UnmarshalJSON(data); err != nil {
		return err
	}
	var m resultMetrics
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	strength := NoStrength
	if m.Strength != nil {
		strength = *m.Strength
	}
	*r = Result{Dependency: dep, Removals: m.Removals, Error: m.Error, Score: m.Score,
		Strength: strength, StrengthBound: m.StrengthBound, Reliable: m.Reliable, RemovalSample: m.RemovalSample,
		Equivalents: m.Equivalents, ImpliedBy: m.ImpliedBy, With: m.With, StatedIn: m.StatedIn}
	return nil
}

// ID is a stable short identifier of the dependency: the first 16 hex
// digits of the SHA-256 of a canonical text in which the context is sorted
// and an OC's two sides are sorted (X: A ~ B and X: B ~ A are the same
// dependency), so that it does not depend on column order. A list-based
// OD's lists keep their order, which is part of its meaning.
func (d Dependency) ID() string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Quote(s))
		b.WriteByte(' ')
	}
	sorted := func(ns []string) {
		s := slices.Clone(ns)
		slices.Sort(s)
		b.WriteByte('{')
		for _, n := range s {
			field(n)
		}
		b.WriteString("} ")
	}
	b.WriteString(d.Kind.String())
	b.WriteByte(' ')
	switch d.Kind {
	case KindOFD:
		sorted(d.Context)
		field(d.RHS)
	case KindOC:
		sorted(d.Context)
		l, r := d.Left, d.Right
		if r < l {
			l, r = r, l
		}
		field(l)
		field(r)
		b.WriteString(d.Polarity.String())
	case KindKey, KindEquivalence:
		sorted(d.Context)
		sorted(d.Set)
	case KindListOD:
		b.WriteByte('[')
		for _, n := range d.LHSList {
			field(n)
		}
		b.WriteString("] [")
		for _, n := range d.RHSList {
			field(n)
		}
		b.WriteByte(']')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// WriteJSON writes the discovery as docs/DESIGN.md's JSON document, one
// dependency per line:
//
//	{"rows": 406, "columns": [...], "epsilon": 0.05,
//	 "dependencies": [
//	  {"kind": "ofd", ..., "text": "{zip}: [] -> city"},
//	  ...],
//	 "stats": {"seconds": ..., "candidates": ..., "validations": ..., "levels": ...}}
func (d *Discovery) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	cols, err := json.Marshal(nonNil(d.Columns))
	if err != nil {
		return err
	}
	eps, err := json.Marshal(d.Epsilon)
	if err != nil {
		return err
	}
	fmt.Fprintf(bw, "{\"rows\": %d, \"columns\": %s, \"epsilon\": %s,\n \"dependencies\": [", d.Rows, cols, eps)
	for i, r := range d.Dependencies {
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("dependency %d (%s): %w", i, r.Dependency, err)
		}
		// "text": the rule as the text listing, validate and the events
		// (dependency_text) write it.
		text, err := json.Marshal(r.Dependency.String())
		if err != nil {
			return err
		}
		line = append(append(append(line[:len(line)-1], `,"text":`...), text...), '}')
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n  ")
		bw.Write(line)
	}
	stats, err := json.Marshal(d.Stats)
	if err != nil {
		return err
	}
	fmt.Fprintf(bw, "],\n \"stats\": %s}\n", stats)
	return bw.Flush()
}

// WriteText writes one readable line per reliable dependency, strongest
// first,
//
//	{zip}: [] -> city  strength=0.93  e=0.0123  removals=517  score=0.31
//
// (with "sample=[...]" when a removal sample was asked for), then one line
// starting with "#" that counts the dependencies that hold but are not
// reliable, then a summary line starting with "#". With all, the line
// counting the unreliable dependencies ends with ":" and they follow it,
// by score.
func (d *Discovery) WriteText(w io.Writer, all bool) error {
	bw := bufio.NewWriter(w)
	texts := make([]string, len(d.Dependencies))
	width := 0
	counts := map[Kind]int{}
	reliable := 0
	for i, r := range d.Dependencies {
		counts[r.Kind]++
		if r.Reliable {
			reliable++
		}
		texts[i] = r.Dependency.String()
		if r.Reliable || all {
			width = max(width, len([]rune(texts[i])))
		}
	}
	width = min(width, 60)
	line := func(i int) {
		r := &d.Dependencies[i]
		strength := "=" + formatStrength(r.Strength)
		if r.StrengthBound { // an upper bound, rounded up (Options.BoundUnreliable)
			strength = "<=" + formatStrength(math.Ceil(r.Strength*100)/100)
		}
		fmt.Fprintf(bw, "%-*s  strength%s  e=%s  removals=%d  score=%s", width, texts[i],
			strength, formatFloat(r.Error), r.Removals, formatFloat(r.Score))
		if len(r.RemovalSample) > 0 {
			bw.WriteString("  sample=[")
			for k, row := range r.RemovalSample {
				if k > 0 {
					bw.WriteByte(',')
				}
				bw.WriteString(strconv.Itoa(row))
			}
			bw.WriteByte(']')
		}
		writeRuleNotes(bw, r)
		bw.WriteByte('\n')
	}
	for i, r := range d.Dependencies {
		if r.Reliable {
			line(i)
		}
	}
	if more := len(d.Dependencies) - reliable; more > 0 {
		fmt.Fprintf(bw, "# %d more hold but look like chance (near-key contexts, near-constant columns)", more)
		writeImpliedCount(bw, d.Dependencies)
		if !all {
			bw.WriteString("; --all lists them\n")
		} else {
			bw.WriteString(":\n")
			for i, r := range d.Dependencies {
				if !r.Reliable {
					line(i)
				}
			}
		}
	}
	fmt.Fprintf(bw, "# %d dependencies (%d ofd, %d oc%s), %d reliable, on %d rows x %d columns at eps=%s; %d candidates, %d validations, %d levels, %.2fs\n",
		len(d.Dependencies), counts[KindOFD], counts[KindOC], ruleCounts(counts), reliable, d.Rows, len(d.Columns), formatFloat(d.Epsilon),
		d.Stats.Candidates, d.Stats.Validations, d.Stats.Levels, d.Stats.Seconds)
	if !d.Complete {
		bw.WriteString("# incomplete: discovery stopped early; the list holds the levels completed\n")
	}
	return bw.Flush()
}

// formatStrength prints a strength with 2 decimals, "-" for NoStrength.
func formatStrength(s float64) string {
	if s < 0 {
		return "-"
	}
	return strconv.FormatFloat(s, 'f', 2, 64)
}

// formatFloat prints 4 significant digits, without trailing zeros.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) }
