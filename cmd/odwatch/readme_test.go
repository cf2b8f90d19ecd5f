package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestREADME runs every command of the README's ```sh blocks from the
// repository root, as written, so that the README cannot rot. The
// conventions (stated in the README):
//
//   - a trailing comment holding "[not run: REASON]" marks a command the
//     test cannot run (a running Kafka, a command that runs until Ctrl-C);
//     the test logs it with its reason;
//   - "[exit N]" in the comment is the expected exit status (default 0);
//   - "[real kafka]" marks a command run only with ODWATCH_KAFKA=real (the
//     local broker of scripts/kafka-local.sh, which such a command starts
//     and stops); otherwise it is logged as not run.
//
// The odwatch binary is built once, by the README's own `go build -o
// odwatch ./cmd/odwatch` with the output moved to a temporary directory;
// `./odwatch ARGS`, `odwatch ARGS` and `go run ./cmd/odwatch ARGS` run it.
// Any other program fails the test: mark it, or teach the test. A command
// naming a file under ../shared that is absent is skipped with a message.
func TestREADME(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := readmeCommands(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) == 0 {
		t.Fatal("no sh commands found in README.md")
	}
	bin := filepath.Join(t.TempDir(), "odwatch")
	built := false
	for _, c := range cmds {
		name := fmt.Sprintf("line%d", c.line)
		if c.notRun == "" && c.realKafka && os.Getenv("ODWATCH_KAFKA") != "real" {
			c.notRun = "needs ODWATCH_KAFKA=real"
		}
		if c.notRun != "" {
			t.Logf("README line %d not run (%s): %s", c.line, c.notRun, c.text)
			continue
		}
		args, err := c.resolve(bin)
		if err != nil {
			t.Errorf("README line %d: %v", c.line, err)
			continue
		}
		if !built && !isBuild(c.args) {
			t.Fatalf("README line %d runs odwatch before the README builds it", c.line)
		}
		t.Run(name, func(t *testing.T) {
			for _, a := range c.args {
				if strings.HasPrefix(a, "../shared/") {
					if _, err := os.Stat(filepath.Join(root, a)); err != nil {
						t.Skipf("README line %d needs %s, absent here (see 'Where the data comes from')", c.line, a)
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			cmd.Dir = root
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			switch {
			case errors.As(err, &ee):
				code = ee.ExitCode()
			case err != nil:
				t.Fatalf("README line %d: %s: %v", c.line, c.text, err)
			}
			if code != c.exit {
				t.Errorf("README line %d: %s\nexit %d, want %d\nstderr: %s", c.line, c.text, code, c.exit, stderr.String())
			}
			if stdout.Len() == 0 && !isBuild(c.args) && !isGenerate(c.args) {
				t.Errorf("README line %d printed nothing: %s\nstderr: %s", c.line, c.text, stderr.String())
			}
		})
		if isBuild(c.args) {
			built = true
		}
	}
	if !built {
		t.Error("the README never builds odwatch (go build -o odwatch ./cmd/odwatch)")
	}
}

// readmeCmd is one command of a ```sh block.
type readmeCmd struct {
	line      int    // line of the README it starts on
	text      string // as written, continuation lines joined
	args      []string
	notRun    string // reason, from "[not run: REASON]"
	exit      int    // from "[exit N]"
	realKafka bool   // "[real kafka]"
}

var (
	notRunMark    = regexp.MustCompile(`\[not run: ([^\]]+)\]`)
	exitMark      = regexp.MustCompile(`\[exit (\d+)\]`)
	realKafkaMark = regexp.MustCompile(`\[real kafka\]`)
)

// readmeCommands extracts the commands of every ```sh block.
func readmeCommands(md string) ([]readmeCmd, error) {
	var out []readmeCmd
	lines := strings.Split(md, "\n")
	in := false
	var cur strings.Builder
	start := 0
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if !in {
			in = trimmed == "```sh"
			continue
		}
		if trimmed == "```" {
			in = false
			continue
		}
		if cur.Len() == 0 {
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			start = i + 1
		}
		if rest, ok := strings.CutSuffix(l, `\`); ok {
			cur.WriteString(rest)
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(l)
		c, err := parseReadmeCmd(start, cur.String())
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		cur.Reset()
	}
	return out, nil
}

func parseReadmeCmd(line int, text string) (readmeCmd, error) {
	c := readmeCmd{line: line, text: strings.Join(strings.Fields(text), " ")}
	args, comment, err := shellWords(text)
	if err != nil {
		return c, fmt.Errorf("README line %d: %v", line, err)
	}
	c.args = args
	if m := notRunMark.FindStringSubmatch(comment); m != nil {
		c.notRun = m[1]
	}
	if m := exitMark.FindStringSubmatch(comment); m != nil {
		c.exit, _ = strconv.Atoi(m[1])
	}
	c.realKafka = realKafkaMark.MatchString(comment)
	return c, nil
}

// shellWords splits a command line the way sh does for the README's simple
// commands: whitespace between words, '...' literal, "..." with \ escapes,
// a # at the start of a word begins a comment. Pipes, redirections and
// variables are not supported (and not in the README).
func shellWords(s string) (words []string, comment string, err error) {
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case ch == '#' && !inWord:
			return words, s[i:], nil
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, "", errors.New("unclosed '")
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, "", errors.New(`unclosed "`)
			}
			inWord = true
		case ch == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		case strings.IndexByte("|&;<>$`", ch) >= 0:
			return nil, "", fmt.Errorf("%q: the README test runs simple commands only", ch)
		default:
			w.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, "", nil
}

func isBuild(args []string) bool {
	return len(args) >= 4 && args[0] == "go" && args[1] == "build" && args[2] == "-o" && args[3] == "odwatch" &&
		args[len(args)-1] == "./cmd/odwatch"
}

// isGenerate: odwatch generate prints nothing when it succeeds.
func isGenerate(args []string) bool {
	return len(args) >= 2 && (args[0] == "odwatch" || args[0] == "./odwatch") && args[1] == "generate"
}

// resolve maps the command to what the test executes: the README's build
// with its output in the test's directory, and odwatch as the built binary.
func (c readmeCmd) resolve(bin string) ([]string, error) {
	a := c.args
	switch {
	case isBuild(a):
		return append([]string{"go", "build", "-o", bin}, a[4:]...), nil
	case a[0] == "./odwatch" || a[0] == "odwatch":
		return append([]string{bin}, a[1:]...), nil
	case len(a) >= 3 && a[0] == "go" && a[1] == "run" && a[2] == "./cmd/odwatch":
		return append([]string{bin}, a[3:]...), nil
	case a[0] == "scripts/kafka-local.sh":
		return a, nil // relative to the command's Dir, the repository root
	}
	return nil, fmt.Errorf("%s: the README test does not know how to run %q; mark it [not run: REASON] or teach TestREADME", c.text, a[0])
}

func TestShellWords(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{`./odwatch validate f.csv 'A ~ B' --epsilon 0.1`, []string{"./odwatch", "validate", "f.csv", "A ~ B", "--epsilon", "0.1"}},
		{`x "a \"b\"" c\ d  # comment [exit 1]`, []string{"x", `a "b"`, "c d"}},
		{`x '{zip}: [] -> city'`, []string{"x", "{zip}: [] -> city"}},
		{`x a#b`, []string{"x", "a#b"}},
	} {
		words, _, err := shellWords(tt.in)
		if err != nil || !slices.Equal(words, tt.want) {
			t.Errorf("shellWords(%s) = %q, %v; want %q", tt.in, words, err, tt.want)
		}
	}
	if _, _, err := shellWords(`x | head`); err == nil {
		t.Error("a pipe was accepted")
	}
	c, err := parseReadmeCmd(1, `odwatch run --brokers b   # [not run: needs Kafka] [exit 3]`)
	if err != nil || c.notRun != "needs Kafka" || c.exit != 3 || len(c.args) != 4 {
		t.Errorf("parseReadmeCmd: %+v, %v", c, err)
	}
}

// TestREADMELinks: every relative link of the README and of docs/ names a
// file of the repository; none leaves it.
func TestREADMELinks(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, path := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		md, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(md), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			abs := filepath.Join(filepath.Dir(path), target)
			if rel, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links %s, outside the repository", filepath.Base(path), m[1])
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links %s, which does not exist", filepath.Base(path), m[1])
			}
		}
	}
}
