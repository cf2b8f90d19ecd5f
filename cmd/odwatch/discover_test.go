package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery"
)

const smallCSV = `id,dept,sal,tax
1,sales,100,10
2,sales,200,20
3,ops,300,30
4,ops,400,35
5,dev,500,50
6,dev,600,40
`

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDiscoverCommand(t *testing.T) {
	path := writeTemp(t, "small.csv", smallCSV)
	ctx := context.Background()

	var out, errOut bytes.Buffer
	// flags after FILE must work
	if err := runDiscover(ctx, []string{path, "--epsilon", "0", "--removal-sample", "2", "--all"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	text := out.String()
	for _, want := range []string{"{id}: [] -> dept", "{}: id ~ sal (asc)  strength=", "# 10 more hold but look like chance", "6 rows x 4 columns at eps=0"} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr not empty for a quick run: %q", errOut.String())
	}

	out.Reset()
	if err := runDiscover(ctx, []string{"--format", "json", path, "--epsilon=0.2"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows         int
		Columns      []string
		Epsilon      float64
		Dependencies []map[string]any
		Stats        map[string]float64
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if doc.Rows != 6 || !reflect.DeepEqual(doc.Columns, []string{"id", "dept", "sal", "tax"}) || doc.Epsilon != 0.2 {
		t.Errorf("header fields: %+v", doc)
	}
	if len(doc.Dependencies) == 0 {
		t.Fatalf("no dependencies:\n%s", out.String())
	}
	for _, d := range doc.Dependencies {
		// Every rule carries its text, as validate and the events do.
		if text, _ := d["text"].(string); text == "" || !strings.Contains(out.String(), `"text":`) {
			t.Errorf("dependency without text: %v", d)
		} else if dep, err := discovery.ParseDependency(text); err != nil && d["kind"] != "key" && d["kind"] != "equivalence" {
			t.Errorf("text %q does not parse: %v", text, err)
		} else if err == nil && d["kind"] != "key" && d["kind"] != "equivalence" && dep.String() != text {
			t.Errorf("text %q is not the rule's own text %q", text, dep.String())
		}
		if _, ok := d["context"].([]any); !ok {
			t.Errorf("context not an array in %v", d)
		}
		for _, k := range []string{"kind", "error", "removals", "score", "strength", "reliable"} {
			if _, ok := d[k]; !ok {
				t.Errorf("field %q missing in %v", k, d)
			}
		}
	}
	if _, ok := doc.Stats["candidates"]; !ok {
		t.Errorf("stats lack candidates: %v", doc.Stats)
	}
}

func TestDiscoverCommandJSONLines(t *testing.T) {
	path := writeTemp(t, "small.ndjson", `{"a":1,"b":{"c":"x"}}
{"a":2,"b":{"c":"y"},"tags":[1]}
{"a":3,"b":{"c":"y"}}
`)
	var out, errOut bytes.Buffer
	if err := runDiscover(context.Background(), []string{path, "--epsilon", "0", "--order-text", "--min-strength", "0"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "a ~ b.c (asc)") {
		t.Errorf("output lacks a ~ b.c:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "ignored 1 array") {
		t.Errorf("skipped arrays not reported: %q", errOut.String())
	}
}

func TestValidateCommand(t *testing.T) {
	path := writeTemp(t, "small.csv", smallCSV)
	var out, errOut bytes.Buffer
	// Does not hold: exit status 1, after the full report.
	if err := runValidate(context.Background(), []string{path, "sal ~ tax", "--epsilon", "0.1"}, &out, &errOut); !errors.Is(err, exitCode(exitFailure)) {
		t.Fatalf("err = %v, want exitCode(1)", err)
	}
	text := out.String()
	for _, want := range []string{
		"dependency  {}: sal ~ tax (asc)",
		"removals    1",
		"verdict     invalid", // floor(0.1*6) = 0 removals allowed
		"line  sal  tax",
		"meaning     sorting by sal sorts tax, except 1 row (17%)",
		"strength    ",
		"reliable    no",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// Data row 4 is line 6 of the file (the header is line 1).
	if !strings.Contains(text, "\n6     500  50\n") && !strings.Contains(text, "\n7     600  40\n") {
		t.Errorf("violating row missing:\n%s", text)
	}

	out.Reset()
	if err := runValidate(context.Background(), []string{"--epsilon", "0.2", path, "{dept}: [] -> tax"}, &out, &errOut); !errors.Is(err, exitCode(exitFailure)) {
		t.Fatalf("err = %v, want exitCode(1)", err)
	}
	if !strings.Contains(out.String(), "removals    3") || !strings.Contains(out.String(), "verdict     invalid") {
		t.Errorf("unexpected:\n%s", out.String())
	}

	out.Reset()
	if err := runValidate(context.Background(), []string{path, "sal ~ tax", "--format", "json", "--epsilon", "0.1"}, &out, &errOut); !errors.Is(err, exitCode(exitFailure)) {
		t.Fatalf("err = %v, want exitCode(1)", err)
	}
	var doc validationJSON
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if doc.Holds || doc.Removals != 1 || doc.MaxRemovals != 0 || doc.Rows != 6 || len(doc.ViolatingRows) != 1 ||
		doc.Text != "{}: sal ~ tax (asc)" || doc.Dependency.Left != "sal" {
		t.Errorf("json: %+v", doc)
	}
	if vr := doc.ViolatingRows[0]; vr.Line != vr.Row+2 || len(vr.Values) != 2 {
		t.Errorf("violating row: %+v", vr)
	}
	if doc.Strength == nil || *doc.Strength < 0 || *doc.Strength > 1 || doc.Reliable {
		t.Errorf("json strength %v, reliable %v", doc.Strength, doc.Reliable)
	}

	// A rule far better than chance that does not hold says both.
	inv := "a,b\n"
	for i := range 60 {
		b := i / 3
		if i%12 == 5 {
			b = (b + 7) % 20
		}
		inv += fmt.Sprintf("%d,%d\n", i, b)
	}
	out.Reset()
	if err := runValidate(context.Background(), []string{writeTemp(t, "inv.csv", inv), "a ~ b"}, &out, &errOut); !errors.Is(err, exitCode(exitFailure)) {
		t.Fatalf("err = %v, want exitCode(1)", err)
	}
	if !strings.Contains(out.String(), "verdict     invalid") || !strings.Contains(out.String(), "reliable    yes by its strength, but it does not hold at this epsilon") {
		t.Errorf("strong rule that does not hold:\n%s", out.String())
	}

	// An OC on nominal text is a usage error naming the column and the fix;
	// declared ordinal it is measured.
	out.Reset()
	err := runValidate(context.Background(), []string{path, "dept ~ sal"}, &out, &errOut)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `"dept"`) || !strings.Contains(err.Error(), "--ordinal") {
		t.Errorf("OC on nominal text: err %v", err)
	}
	out.Reset()
	if err := runValidate(context.Background(), []string{path, "dept ~ sal", "--ordinal", "dept=sales,ops,dev"}, &out, &errOut); err != nil {
		t.Errorf("declared ordinal: %v\n%s", err, out.String())
	}
}

func TestCommandErrors(t *testing.T) {
	path := writeTemp(t, "small.csv", smallCSV)
	ragged := writeTemp(t, "ragged.csv", "a,b\n1,2\n3\n")
	tests := []struct {
		name      string
		run       func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) error
		args      []string
		wantUsage bool
		wantText  string
	}{
		{"eps too big", discoverRun, []string{path, "--epsilon", "1"}, true, "--epsilon"},
		{"eps negative", validateRun, []string{path, "a ~ b", "--epsilon", "-0.1"}, true, "--epsilon"},
		{"no file", discoverRun, nil, true, "FILE"},
		{"two files", discoverRun, []string{path, path}, true, "FILE"},
		{"bad format", discoverRun, []string{path, "--format", "xml"}, true, "--format"},
		{"bad validator", discoverRun, []string{path, "--validator", "x"}, true, "--validator"},
		{"bad delimiter", discoverRun, []string{path, "--delimiter", ";;"}, true, "--delimiter"},
		{"unknown flag", discoverRun, []string{path, "--nope"}, true, "nope"},
		{"missing file", discoverRun, []string{path + ".absent"}, true, "no such file"},
		{"ragged row", discoverRun, []string{ragged}, true, "line 3: 1 fields, header has 2"},
		{"bad dependency", validateRun, []string{path, "sal ~"}, true, "expected a column name"},
		{"unknown column", validateRun, []string{path, "sal ~ nope"}, true, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := tt.run(context.Background(), tt.args, &out, &errOut)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, errUsage) != tt.wantUsage {
				t.Errorf("errors.Is(err, errUsage) = %v, want %v (%v)", !tt.wantUsage, tt.wantUsage, err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q lacks %q", err, tt.wantText)
			}
		})
	}
}

func discoverRun(ctx context.Context, args []string, out, errOut *bytes.Buffer) error {
	return runDiscover(ctx, args, out, errOut)
}

func validateRun(ctx context.Context, args []string, out, errOut *bytes.Buffer) error {
	return runValidate(ctx, args, out, errOut)
}

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		args []string
		pos  []string
		eps  float64
		json bool
	}{
		{[]string{"f"}, []string{"f"}, 0, false},
		{[]string{"--eps", "0.1", "f"}, []string{"f"}, 0.1, false},
		{[]string{"f", "--eps", "0.1", "--json"}, []string{"f"}, 0.1, true},
		{[]string{"f", "--json", "g", "--eps=0.3"}, []string{"f", "g"}, 0.3, true},
		{[]string{"-", "--eps", "0.2"}, []string{"-"}, 0.2, false},
		{[]string{"--json", "--", "f", "--eps"}, []string{"f", "--eps"}, 0, true},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		eps := fs.Float64("eps", 0, "")
		js := fs.Bool("json", false, "")
		pos, err := parseArgs(fs, tt.args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if !reflect.DeepEqual(pos, tt.pos) || *eps != tt.eps || *js != tt.json {
			t.Errorf("%q: pos %q eps %v json %v", tt.args, pos, *eps, *js)
		}
	}
}

func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	// Not a terminal: never draws.
	p := newProgressBar(&buf)
	p.start = p.start.Add(-2 * time.Second)
	p.set("x")
	p.done()
	if buf.Len() != 0 {
		t.Errorf("drew on a non-terminal: %q", buf.String())
	}

	// A terminal, but the run is younger than a second: still quiet.
	p = &progressBar{w: &buf, enabled: true, start: time.Now()}
	p.set("early")
	if buf.Len() != 0 {
		t.Errorf("drew within the first second: %q", buf.String())
	}
	// Later: draws, throttles, and erases its line when done.
	p.start = p.start.Add(-2 * time.Second)
	p.set("level 1")
	p.set("level 1 again") // within 100 ms: dropped
	p.done()
	if got, want := buf.String(), "\r\033[Klevel 1\r\033[K"; got != want {
		t.Errorf("drew %q, want %q", got, want)
	}
}

func TestDiscoverTimeoutPrintsPartial(t *testing.T) {
	path := writeTemp(t, "small.csv", smallCSV)
	var out, errOut bytes.Buffer
	if err := runDiscover(context.Background(), []string{path, "--timeout", "1ns"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "# incomplete") || !strings.Contains(errOut.String(), "--timeout 1ns reached") {
		t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
	}
	// A cancelled run (interrupt) is an error, not a partial result.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runDiscover(ctx, []string{path}, &out, &errOut); err == nil {
		t.Error("cancelled run: no error")
	}
}

func TestLooksLikeJSON(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":1}`: true, "\n  {": true, "a,b\n": false, "": false, "   ": false, "\x1f\x8b": false,
	} {
		if got := looksLikeJSON(bufio.NewReader(strings.NewReader(in))); got != want {
			t.Errorf("looksLikeJSON(%q) = %v", in, got)
		}
	}
}

// TestLevelProgress: the figures of the status line never go back, even
// when discovery's total grows as a level's order candidates become known.
func TestLevelProgress(t *testing.T) {
	lp := &levelProgress{maxLevel: 5}
	steps := []struct {
		p    discovery.Progress
		want string
	}{
		{discovery.Progress{Level: 1, Candidates: 5}, "level 1 of 5: FDs 0/5 (0%), 0 dependencies found, 3s"},
		{discovery.Progress{Level: 1, Candidates: 5, Validated: 4}, "level 1 of 5: FDs 4/5 (80%), 0 dependencies found, 3s"},
		{discovery.Progress{Level: 1, Candidates: 15, Validated: 5}, "level 1 of 5: FDs 5/5, orders 0/10 (0%), 0 dependencies found, 3s"},
		{discovery.Progress{Level: 1, Candidates: 15, Validated: 12}, "level 1 of 5: FDs 5/5, orders 7/10 (70%), 0 dependencies found, 3s"},
		{discovery.Progress{Level: 2, Candidates: 20, Found: 7}, "level 2 of 5: FDs 0/20 (0%), 7 dependencies found, 3s"},
		{discovery.Progress{Level: 2, Candidates: 20, Validated: 20, Found: 7}, "level 2 of 5: FDs 20/20 (100%), 7 dependencies found, 3s"},
		{discovery.Progress{Level: 2, Candidates: 51, Validated: 31, Found: 7}, "level 2 of 5: FDs 20/20, orders 11/31 (35%), 7 dependencies found, 3s"},
		{discovery.Progress{Level: 3, Candidates: 0, Found: 9}, "level 3 of 5: FDs 0/0 (100%), 9 dependencies found, 3s"},
		{discovery.Progress{Level: 3, Candidates: 4, Validated: 1, Found: 9}, "level 3 of 5: FDs 0/0, orders 1/4 (25%), 9 dependencies found, 3s"},
	}
	for _, st := range steps {
		if got := lp.line(st.p, 3*time.Second); got != st.want {
			t.Errorf("%+v:\n got %s\nwant %s", st.p, got, st.want)
		}
	}
	// An estimate once a phase has run for etaAfter: 10 of 40 in 2 s, so
	// 30 more take about 6 s.
	lp = &levelProgress{maxLevel: 5}
	lp.line(discovery.Progress{Level: 1, Candidates: 40}, time.Second)
	want := "level 1 of 5: FDs 10/40 (25%, about 6s left), 0 dependencies found, 3s"
	if got := lp.line(discovery.Progress{Level: 1, Candidates: 40, Validated: 10}, time.Second+etaAfter); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestDiscoverTyping: nominal text takes no part in OCs unless declared
// ordinal (by list or by bytes) or --order-text orders all text; a bad
// declaration is a one-line usage error naming the column and the value.
func TestDiscoverTyping(t *testing.T) {
	path := writeTemp(t, "sizes.csv", "size,price,code\nS,1,c1\nM,2,c2\nL,3,c3\nS,1,c1\nM,2,c2\nL,3,c3\nXL,4,c4\n")
	ctx := context.Background()
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runDiscover(ctx, append([]string{path, "--epsilon", "0", "--all", "--legend=false"}, args...), &out, &errOut)
		return out.String(), err
	}
	for _, tc := range []struct {
		args []string
		want []string // the OCs of the output
	}{
		{nil, nil},
		{[]string{"--ordinal", "size=S,M,L,XL"}, []string{"{}: size ~ price (asc)"}},
		{[]string{"--ordinal", "size=XL,L,M,S"}, []string{"{}: size ~ price (desc)"}},
		{[]string{"--ordinal", "code"}, []string{"{}: price ~ code (asc)"}},
		{[]string{"--ordinal", "code", "--ordinal", "size=S,M,L,XL"}, []string{"{}: price ~ code (asc)", "{}: size ~ code (asc)", "{}: size ~ price (asc)"}},
		{[]string{"--order-text"}, []string{"{}: price ~ code (asc)"}},
	} {
		out, err := run(tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		var ocs []string
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, " ~ ") {
				ocs = append(ocs, strings.Fields(line)[0]+" "+strings.Join(strings.Fields(line)[1:5], " "))
			}
		}
		if !reflect.DeepEqual(ocs, tc.want) {
			t.Errorf("%v: OCs %q, want %q in:\n%s", tc.args, ocs, tc.want, out)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--ordinal", "colour=red"}, []string{`"colour"`}},
		{[]string{"--ordinal", "size=S,M,L"}, []string{`"size"`, `"XL"`}},
	} {
		_, err := run(tc.args...)
		if !errors.Is(err, errUsage) {
			t.Fatalf("%v: err %v, want a usage error", tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %s", tc.args, err, w)
			}
		}
	}
}

// TestDiscoverLegend: the text listing ends with at most three plain-words
// lines, its first dependency read out; --legend=false leaves them out.
func TestDiscoverLegend(t *testing.T) {
	path := writeTemp(t, "small.csv", smallCSV)
	var out, errOut bytes.Buffer
	if err := runDiscover(context.Background(), []string{path, "--epsilon", "0"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	i := strings.Index(text, "# how to read it: ")
	if i < 0 {
		t.Fatalf("no legend:\n%s", text)
	}
	legend := strings.Split(strings.TrimSuffix(text[i:], "\n"), "\n")
	if len(legend) > 3 || !strings.Contains(legend[0], " means ") || !strings.Contains(text[i:], "score = share of row pairs") {
		t.Errorf("legend:\n%s", text[i:])
	}
	out.Reset()
	if err := runDiscover(context.Background(), []string{path, "--epsilon", "0", "--legend=false"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "how to read it") {
		t.Errorf("--legend=false printed the legend:\n%s", out.String())
	}
}

// TestDiscoverKeysAndEquivalences: discover says a key and an equivalence
// in plain words and in JSON, and validate measures both; a key on missing
// columns is a usage error naming them.
func TestDiscoverKeysAndEquivalences(t *testing.T) {
	var b strings.Builder
	b.WriteString("order_id,code,label,grp\n")
	for r := range 200 {
		fmt.Fprintf(&b, "%d,%d,L%d,%d\n", r, r%20, r%20, r%20%5)
	}
	path := writeTemp(t, "orders.csv", b.String())
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if err := runDiscover(ctx, []string{path}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	for _, want := range []string{"key(order_id)", "(order_id identifies a record)", "{}: code <-> label", "(code and label are equivalent"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := runDiscover(ctx, []string{path, "--format", "json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"kind":"key","columns":["order_id"]`, `{"kind":"equivalence","context":[],"columns":["code","label"]`, `"implied_by":["key(order_id)"]`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("JSON output lacks %q:\n%s", want, out.String())
		}
	}
	for _, dep := range []string{"key(order_id)", "code <-> label"} {
		out.Reset()
		if err := runValidate(ctx, []string{path, dep}, &out, &errOut); err != nil {
			t.Errorf("validate %s: %v\n%s", dep, err, out.String())
		}
	}
	err := runValidate(ctx, []string{path, "key(order,cod)"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `unknown columns "order", "cod"`) {
		t.Errorf("validate on missing columns: %v", err)
	}
}
