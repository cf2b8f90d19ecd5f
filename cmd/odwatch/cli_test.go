package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestHelpStyle: every subcommand's -h prints the usage line, a
// description and its flags with defaults on stdout, and exits 0.
func TestHelpStyle(t *testing.T) {
	for _, c := range subcommands() {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut strings.Builder
			if code := run([]string{c.name, "-h"}, &out, &errOut); code != exitOK {
				t.Errorf("exit %d, want 0; stderr %q", code, errOut.String())
			}
			help := out.String()
			if !strings.HasPrefix(help, "usage: odwatch "+c.name+" ") {
				t.Errorf("help does not start with the usage line:\n%s", help)
			}
			if !strings.Contains(help, "\nflags:\n  --") || !strings.Contains(help, "Exit status:") {
				t.Errorf("help lacks flags or exit status:\n%s", help)
			}
			if strings.Contains(help, "0 = default") || strings.Contains(help, "Usage of") {
				t.Errorf("help has an unstated default or Go's bare usage:\n%s", help)
			}
			if errOut.Len() != 0 {
				t.Errorf("help wrote to stderr: %q", errOut.String())
			}
		})
	}
	var out, errOut strings.Builder
	if code := run([]string{"--help"}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "commands:") {
		t.Errorf("odwatch --help: exit %d, %q", code, out.String())
	}
}

// TestUsageErrorsAreShort: a usage or input error is at most three lines on
// stderr, names the problem, has a fix line and points at -h; nothing on
// stdout; exit 2.
func TestUsageErrorsAreShort(t *testing.T) {
	path := writeTemp(t, "cars.csv", "Name,Cylinders,Displacement\na,4,100\nb,6,200\nc,8,300\n")
	binary := writeTemp(t, "bin.csv", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\"\x00\x00\n\x00\x00")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	fmt.Fprintln(zw, "a,b")
	for i := range 50000 {
		fmt.Fprintf(zw, "%d,%d\n", i, i*7919%1000)
	}
	zw.Close()
	truncated := writeTemp(t, "cut.csv.gz", gz.String()[:gz.Len()/2])
	headerOnly := writeTemp(t, "header.csv", "Name,Cylinders\n")
	noObjects := writeTemp(t, "none.jsonl", "")
	tests := []struct {
		args []string
		want []string // substrings of the whole error
	}{
		// A listing of no dependencies would read as "none hold".
		{[]string{"discover", headerOnly}, []string{"header.csv: no data rows", "a header line and no record under it"}},
		{[]string{"discover", noObjects}, []string{"none.jsonl: no data rows", "no JSON object"}},
		{[]string{"validate", headerOnly, "{Name}: [] -> Cylinders"}, []string{"header.csv: no data rows"}},
		{nil, []string{"missing command", "discover"}},
		{[]string{"discovr"}, []string{`unknown command "discovr"`, "did you mean discover?"}},
		{[]string{"discover", path, "--frobnicate"}, []string{"unknown flag --frobnicate"}},
		{[]string{"discover", path, "--epsiln", "0.1"}, []string{"unknown flag --epsiln", "did you mean --epsilon?"}},
		{[]string{"discover", path, "--epsilon", "abc"}, []string{`--epsilon "abc": want a number`, "--epsilon 0.05 (the default)"}},
		{[]string{"discover", path, "--epsilon"}, []string{"--epsilon needs a value"}},
		{[]string{"discover", path, "--epsilon", "2"}, []string{"--epsilon 2: want a share in [0, 1)"}},
		{[]string{"discover", path, "--timeout", "soon"}, []string{"want a duration"}},
		{[]string{"discover"}, []string{"want exactly one FILE argument, got 0", "usage: odwatch discover FILE [flags]"}},
		{[]string{"discover", path + ".absent"}, []string{"no such file", "check the path"}},
		{[]string{"discover", binary}, []string{"not a CSV or JSON Lines file"}},
		{[]string{"validate", path, "Cylinders", "~", "Displacement"}, []string{"split the dependency", "quote it: odwatch validate " + path + " 'Cylinders ~ Displacement'"}},
		// The shell turned the unquoted ~ into the home directory.
		{[]string{"validate", path, "Cylinders", os.Getenv("HOME"), "Displacement"}, []string{"split the dependency", "'Cylinders ~ Displacement'"}},
		{[]string{"discover", truncated}, []string{"gzip: the file is truncated", "copy or download it again"}},
		{[]string{"validate", path, "cylinders ~ displacement"}, []string{`unknown columns "cylinders", "displacement"`, "did you mean Cylinders?"}},
		{[]string{"validate", path, "Cylinders ~ Weight"}, []string{`unknown column "Weight"`, "columns: Name, Cylinders, Displacement"}},
		{[]string{"validate", path, "Cylinders ~"}, []string{`invalid dependency "Cylinders ~"`, "write it as"}},
		{[]string{"validate", path, "key(Name,Weight)"}, []string{`unknown column "Weight"`, "columns: Name, Cylinders, Displacement"}},
		{[]string{"validate", path, "{Origin}: Name <-> Weight"}, []string{`unknown columns "Origin", "Weight"`, "columns: Name, Cylinders, Displacement"}},
		{[]string{"run", "--no-such-flag"}, []string{"unknown flag --no-such-flag"}},
		{[]string{"run", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"demo", "--rate", "fast"}, []string{`--rate "fast": want a number`}},
		{[]string{"generate"}, []string{"--brokers is required"}},
		{[]string{"run", "--brokers", "a:1", "--topic", "t"}, []string{"state-dir: is required", "--config file"}},
		{[]string{"run", "--config", "/nonexistent/odwatch.yaml"}, []string{"no such file"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut strings.Builder
			code := run(tt.args, &out, &errOut)
			if code != exitUsage {
				t.Errorf("exit %d, want 2", code)
			}
			msg := errOut.String()
			lines := strings.Split(strings.TrimSuffix(msg, "\n"), "\n")
			if len(lines) > 3 || len(lines) < 2 {
				t.Errorf("%d lines on stderr, want 2 or 3:\n%s", len(lines), msg)
			}
			if !strings.HasSuffix(lines[len(lines)-1], "-h' for more") {
				t.Errorf("last line does not point at -h:\n%s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr lacks %q:\n%s", w, msg)
				}
			}
			if out.Len() != 0 {
				t.Errorf("stdout not empty: %q", out.String())
			}
			// The problem line says nothing twice.
			problem := lines[0][strings.Index(lines[0], ": ")+2:]
			for _, part := range regexp.MustCompile(`"[^"]*"|[^:]{12,}`).FindAllString(problem, -1) {
				if strings.Count(problem, strings.TrimSpace(part)) > 1 {
					t.Errorf("%q repeated:\n%s", part, msg)
				}
			}
		})
	}
}

// TestValidateExitStatus: 0 holds at --epsilon, 1 does not, 2 usage/input.
func TestValidateExitStatus(t *testing.T) {
	path := writeTemp(t, "small.csv", smallCSV)
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"validate", path, "sal ~ tax", "--epsilon", "0.2"}, exitOK},    // 1 removal of 6 allowed
		{[]string{"validate", path, "sal ~ tax", "--epsilon", "0.1"}, 1},         // 0 allowed
		{[]string{"validate", path, "{id}: [] -> dept"}, exitOK},                 // exact
		{[]string{"validate", path, "{dept}: [] -> tax", "--epsilon", "0.2"}, 1}, // 3 removals
		{[]string{"validate", path, "sal ~ nope"}, exitUsage},
		{[]string{"validate", path + ".absent", "sal ~ tax"}, exitUsage},
		{[]string{"validate", path, "sal ~ tax", "--format", "json", "--epsilon", "0.2"}, exitOK},
	} {
		var out, errOut strings.Builder
		if code := run(tt.args, &out, &errOut); code != tt.code {
			t.Errorf("%q: exit %d, want %d\nstdout %s\nstderr %s", tt.args, code, tt.code, out.String(), errOut.String())
		}
	}
}

func TestVersion(t *testing.T) {
	var out, errOut strings.Builder
	if code := run([]string{"--version"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	re := regexp.MustCompile(`^odwatch \S+\ncommit  \S+.*\ngo      go\S+ \S+/\S+\n$`)
	if !re.MatchString(out.String()) {
		t.Errorf("--version printed %q", out.String())
	}
}

func TestNearest(t *testing.T) {
	names := []string{"Name", "Cylinders", "Displacement", "Horsepower", "Year", "Origin"}
	for in, want := range map[string]string{
		"cylinders":    "[Cylinders]",
		"Cylinder":     "[Cylinders]",
		"displacment":  "[Displacement]",
		"year":         "[Year]",
		"zzz":          "[]",
		"horse":        "[Horsepower]",
		"Displacement": "[Displacement]",
	} {
		if got := fmt.Sprint(nearest(in, names, 3)); got != want {
			t.Errorf("nearest(%q) = %s, want %s", in, got, want)
		}
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("editDistance = %d, want 3", d)
	}
}

// TestHelpExamplesAndRequired: every command's help has an example;
// `odwatch help CMD` prints it; `--version` works after a command; the
// flags a command cannot run without say "required".
func TestHelpExamplesAndRequired(t *testing.T) {
	t.Parallel()
	for _, c := range subcommands() {
		var viaFlag, viaHelp, stderr strings.Builder
		if code := run([]string{c.name, "-h"}, &viaFlag, &stderr); code != exitOK {
			t.Errorf("%s -h: exit %d, %s", c.name, code, stderr.String())
		}
		if code := run([]string{"help", c.name}, &viaHelp, &stderr); code != exitOK || viaHelp.String() != viaFlag.String() {
			t.Errorf("help %s: exit %d, output differs from %s -h:\n%s", c.name, code, c.name, viaHelp.String())
		}
		h := viaFlag.String()
		if !strings.HasPrefix(h, "usage: odwatch "+c.name+" ") || !strings.Contains(h, "\nExample") ||
			!strings.Contains(h, "\n  odwatch "+c.name+" ") || !strings.Contains(h, "Exit status") {
			t.Errorf("%s -h lacks the usage line, an example or the exit status:\n%s", c.name, h)
		}
		var v strings.Builder
		if code := run([]string{c.name, "--version"}, &v, &stderr); code != exitOK || !strings.Contains(v.String(), "go ") {
			t.Errorf("%s --version: exit %d, %q", c.name, code, v.String())
		}
	}
	required := map[string][]string{"run": {"brokers", "topic", "state-dir"}, "generate": {"brokers"}}
	for cmd, flags := range required {
		var h, stderr strings.Builder
		run([]string{cmd, "-h"}, &h, &stderr)
		for _, f := range flags {
			_, after, _ := strings.Cut(h.String(), "\n  --"+f+" ")
			usage, _, _ := strings.Cut(strings.SplitN(after, "\n", 2)[1], "\n")
			if !strings.Contains(usage, "(required") {
				t.Errorf("%s -h: --%s is not marked required: %q", cmd, f, usage)
			}
		}
	}
}

// TestSameDefaults: demo, run and replay share the defaults of the flags
// they have in common, margin (auto) and log level included.
func TestSameDefaults(t *testing.T) {
	t.Parallel()
	sets := map[string]*flag.FlagSet{"run": newRunFlags("run").fs, "replay": newReplayFlags().fs, "demo": newDemoFlags().fs}
	for _, name := range []string{"margin", "log-level", "k", "epsilon", "min-strength", "discover-after", "max-level"} {
		var first string
		for cmd, fs := range sets {
			f := fs.Lookup(name)
			if f == nil {
				continue
			}
			if first == "" {
				first = f.DefValue
			}
			if f.DefValue != first {
				t.Errorf("--%s: %s defaults to %s, another command to %s", name, cmd, f.DefValue, first)
			}
		}
	}
	if got := newDemoFlags().fs.Lookup("margin").Value.Set("auto"); got != nil {
		t.Errorf("demo --margin auto: %v", got)
	}
}
