package main

import (
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
	"syscall"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
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
//     and stops); otherwise it is logged as not run;
//   - "[background]" marks a command that runs until Ctrl-C (a broker, the
//     monitor): the test starts it, waits for its first line of output,
//     runs the next commands, and interrupts it (SIGINT, expecting exit 0)
//     at the end of its block. Blocks with background commands take a
//     machine-wide lock, since their ports are fixed;
//   - a pipeline (a | b) runs its stages connected; when the last one
//     exits, the others are killed, as SIGPIPE would end them.
//
// Besides odwatch, the test runs scripts/kafka-local.sh, kcat, jq, curl
// (a block using one that is not installed is skipped, saying which) and
// rm -rf /tmp/PATH.
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
	var bg backgroundCmds // of the current block
	defer bg.stop(t)
	block := -1
	for _, c := range cmds {
		if c.block != block {
			bg.stop(t)
			block = c.block
		}
		name := fmt.Sprintf("line%d", c.line)
		if c.notRun == "" && c.realKafka && os.Getenv("ODWATCH_KAFKA") != "real" {
			c.notRun = "needs ODWATCH_KAFKA=real"
		}
		if c.notRun != "" {
			t.Logf("README line %d not run (%s): %s", c.line, c.notRun, c.text)
			continue
		}
		if prog := missingProgram(cmds, c.block); prog != "" {
			t.Run(name, func(t *testing.T) {
				t.Skipf("README line %d: its block needs %s, absent here (.ci/run installs it)", c.line, prog)
			})
			continue
		}
		stages, err := c.resolveAll(bin)
		if err != nil {
			t.Errorf("README line %d: %v", c.line, err)
			continue
		}
		if !built && !isBuild(c.args) {
			t.Fatalf("README line %d runs odwatch before the README builds it", c.line)
		}
		if c.background {
			bg.start(t, c, stages[0], root)
			continue
		}
		t.Run(name, func(t *testing.T) { runReadmeCmd(t, c, stages, root) })
		if isBuild(c.args) {
			built = true
		}
	}
	if !built {
		t.Error("the README never builds odwatch (go build -o odwatch ./cmd/odwatch)")
	}
}

// runReadmeCmd runs one README command (its resolved pipeline stages) from
// the repository root and checks its exit status and output.
func runReadmeCmd(t *testing.T, c readmeCmd, stages [][]string, root string) {
	for _, a := range c.args {
		if strings.HasPrefix(a, "../shared/") {
			if _, err := os.Stat(filepath.Join(root, a)); err != nil {
				t.Skipf("README line %d needs %s, absent here (see 'Where the data comes from')", c.line, a)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stdout, stderr, code, err := runPipeline(ctx, stages, root)
	if err != nil {
		t.Fatalf("README line %d: %s: %v", c.line, c.text, err)
	}
	if code != c.exit {
		t.Errorf("README line %d: %s\nexit %d, want %d\nstderr: %s", c.line, c.text, code, c.exit, stderr)
	}
	if stdout == "" && !quiet(c.args) {
		t.Errorf("README line %d printed nothing: %s\nstderr: %s", c.line, c.text, stderr)
	}
}

// runPipeline runs the stages of a pipeline in dir, each one's output the
// next one's input, and returns the last one's output and exit status and
// every stage's standard error. When the last stage exits, the others are
// killed, as the shell's SIGPIPE ends them at their next write (kcat
// waiting for more messages after jq has its answer).
func runPipeline(ctx context.Context, stages [][]string, dir string) (stdout, stderr string, code int, err error) {
	var out, errOut testkit.SyncBuffer
	cmds := make([]*exec.Cmd, len(stages))
	for i, st := range stages {
		cmds[i] = exec.CommandContext(ctx, st[0], st[1:]...)
		cmds[i].Dir, cmds[i].Stderr = dir, &errOut
	}
	var pipes []*os.File
	for i := 0; i+1 < len(cmds); i++ {
		r, w, err := os.Pipe()
		if err != nil {
			return "", "", 0, err
		}
		cmds[i].Stdout, cmds[i+1].Stdin = w, r
		pipes = append(pipes, r, w)
	}
	last := cmds[len(cmds)-1]
	last.Stdout = &out
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			return "", "", 0, err
		}
	}
	for _, p := range pipes {
		p.Close() // the children hold their ends
	}
	err = last.Wait()
	for _, c := range cmds[:len(cmds)-1] {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errOut.String(), ee.ExitCode(), nil
	}
	return out.String(), errOut.String(), 0, err
}

// backgroundCmds are the "[background]" commands of a block, running; the
// first one takes readmeLock, so that two README tests of the machine do
// not start brokers on the same port at once.
type backgroundCmds struct {
	procs []backgroundCmd
	lock  *os.File
}

type backgroundCmd struct {
	c           readmeCmd
	cmd         *exec.Cmd
	done        chan error
	out, errOut *testkit.SyncBuffer
}

// start starts c (args) in dir and waits until it printed its first line,
// its sign of being ready.
func (b *backgroundCmds) start(t *testing.T, c readmeCmd, args []string, dir string) {
	t.Helper()
	if b.lock == nil {
		b.lock = readmeLock(t)
	}
	p := backgroundCmd{c: c, cmd: exec.Command(args[0], args[1:]...), done: make(chan error, 1),
		out: &testkit.SyncBuffer{}, errOut: &testkit.SyncBuffer{}}
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, p.out, p.errOut
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("README line %d: %s: %v", c.line, c.text, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	testkit.Eventually(t, time.Minute, fmt.Sprintf("README line %d printing its first line", c.line), func() bool {
		select {
		case err := <-p.done:
			t.Fatalf("README line %d: %s: exited before the next command (%v)\nstdout: %s\nstderr: %s", c.line, c.text, err, p.out, p.errOut)
		default:
		}
		return strings.Contains(p.out.String()+p.errOut.String(), "\n")
	})
	b.procs = append(b.procs, p)
}

// stop interrupts the running commands, the last started first (the
// monitor before its broker), as Ctrl-C would, and checks that each stops
// with its expected status.
func (b *backgroundCmds) stop(t *testing.T) {
	t.Helper()
	for i := len(b.procs) - 1; i >= 0; i-- {
		p := b.procs[i]
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-p.done:
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			if code != p.c.exit {
				t.Errorf("README line %d: %s\nexit %d after Ctrl-C, want %d\nstderr: %s", p.c.line, p.c.text, code, p.c.exit, p.errOut)
			}
		case <-time.After(time.Minute):
			_ = p.cmd.Process.Kill()
			t.Errorf("README line %d did not stop within a minute of Ctrl-C: %s", p.c.line, p.c.text)
		}
	}
	b.procs = nil
	if b.lock != nil {
		b.lock.Close() // releases the flock
		b.lock = nil
	}
}

// readmeLock takes an exclusive lock shared by the README tests of every
// checkout on the machine.
func readmeLock(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "odwatch-readme-background.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return f
}

// externalPrograms are the programs besides odwatch the README runs; a
// block using one that is absent is skipped.
var externalPrograms = []string{"kcat", "jq", "curl"}

// missingProgram is the first external program the commands of block use
// that is not on PATH, or "".
func missingProgram(cmds []readmeCmd, block int) string {
	for _, c := range cmds {
		if c.block != block || c.notRun != "" {
			continue
		}
		for _, st := range c.stages {
			if slices.Contains(externalPrograms, st[0]) {
				if _, err := exec.LookPath(st[0]); err != nil {
					return st[0]
				}
			}
		}
	}
	return ""
}

// quiet: the commands that print nothing when they succeed: the build,
// odwatch generate, kcat producing, rm.
func quiet(args []string) bool {
	return isBuild(args) || isGenerate(args) || args[0] == "rm" || (args[0] == "kcat" && slices.Contains(args, "-P"))
}

// readmeCmd is one command of a ```sh block.
type readmeCmd struct {
	line      int    // line of the README it starts on
	text      string // as written, continuation lines joined
	args      []string
	notRun    string // reason, from "[not run: REASON]"
	exit      int    // from "[exit N]"
	realKafka bool   // "[real kafka]"
	// background: "[background]", a command that runs until Ctrl-C,
	// started and left running until the end of its block.
	background bool
	block      int        // the ```sh block it is in, from 0
	stages     [][]string // the commands of a pipeline; stages[0] is args
}

var (
	notRunMark    = regexp.MustCompile(`\[not run: ([^\]]+)\]`)
	exitMark      = regexp.MustCompile(`\[exit (\d+)\]`)
	realKafkaMark = regexp.MustCompile(`\[real kafka\]`)
	backgroundMk  = regexp.MustCompile(`\[background\]`)
)

// readmeCommands extracts the commands of every ```sh block.
func readmeCommands(md string) ([]readmeCmd, error) {
	var out []readmeCmd
	lines := strings.Split(md, "\n")
	in := false
	var cur strings.Builder
	start, block := 0, -1
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if !in {
			in = trimmed == "```sh"
			if in {
				block++
			}
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
		c.block = block
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
	c.background = backgroundMk.MatchString(comment)
	c.stages = [][]string{{}}
	for _, a := range args {
		if a == pipeWord {
			c.stages = append(c.stages, nil)
			continue
		}
		c.stages[len(c.stages)-1] = append(c.stages[len(c.stages)-1], a)
	}
	c.args = c.stages[0]
	for _, st := range c.stages {
		if len(st) == 0 {
			return c, fmt.Errorf("README line %d: an empty command in a pipeline", line)
		}
	}
	return c, nil
}

// shellWords splits a command line the way sh does for the README's simple
// commands: whitespace between words, '...' literal, "..." with \ escapes,
// a # at the start of a word begins a comment, a | between words is
// returned as pipeWord. Redirections and variables are not supported (and
// not in the README).
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
		case ch == '|' && !inWord && (i+1 >= len(s) || s[i+1] == ' '):
			words = append(words, pipeWord)
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

// pipeWord stands for an unquoted | in shellWords' words.
const pipeWord = "\x00|"

func isBuild(args []string) bool {
	return len(args) >= 4 && args[0] == "go" && args[1] == "build" && args[2] == "-o" && args[3] == "odwatch" &&
		args[len(args)-1] == "./cmd/odwatch"
}

// isGenerate: odwatch generate prints nothing when it succeeds.
func isGenerate(args []string) bool {
	return len(args) >= 2 && (args[0] == "odwatch" || args[0] == "./odwatch") && args[1] == "generate"
}

// resolveAll resolves every stage of the pipeline.
func (c readmeCmd) resolveAll(bin string) ([][]string, error) {
	var out [][]string
	for _, st := range c.stages {
		cc := c
		cc.args = st
		args, err := cc.resolve(bin)
		if err != nil {
			return nil, err
		}
		out = append(out, args)
	}
	return out, nil
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
	case slices.Contains(externalPrograms, a[0]):
		return a, nil
	case a[0] == "rm" && len(a) == 3 && a[1] == "-rf" && strings.HasPrefix(a[2], "/tmp/") && !strings.Contains(a[2], ".."):
		return a, nil
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
	if _, _, err := shellWords(`x > f`); err == nil {
		t.Error("a redirection was accepted")
	}
	c, err := parseReadmeCmd(1, `kcat -C -f '%s\n' | jq -c '{a: (.b | length)}'   # [background]`)
	if err != nil || len(c.stages) != 2 || !slices.Equal(c.stages[1], []string{"jq", "-c", "{a: (.b | length)}"}) || !c.background {
		t.Errorf("pipeline: %+v, %v", c, err)
	}
	c, err = parseReadmeCmd(1, `odwatch run --brokers b   # [not run: needs Kafka] [exit 3]`)
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
