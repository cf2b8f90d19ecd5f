// Package deploy holds the deployment files of odwatch (the compose stack's
// configuration, Prometheus rules, Grafana dashboard, example configs) and
// the tests that keep them from rotting: well-formed files, pinned images,
// mounts that exist, promtool checks and rule unit tests, and metric names
// that a running monitor really registers. It has no Go code besides tests.
package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// repoRoot is the repository root relative to this package's directory
// (go test runs in deploy/).
const repoRoot = ".."

// Paths of the files the tests read, relative to the repository root.
const (
	composeFile      = "docker-compose.yml"
	dockerfile       = "Dockerfile"
	prometheusConfig = "deploy/prometheus/prometheus.yml"
	rulesFile        = "deploy/prometheus/rules/odwatch.rules.yml"
	rulesTestFile    = "deploy/prometheus/tests/odwatch.rules.test.yml"
	dashboardFile    = "deploy/grafana/dashboards/odwatch.json"
	datasourceFile   = "deploy/grafana/provisioning/datasources/prometheus.yml"
	dashProviderFile = "deploy/grafana/provisioning/dashboards/odwatch.yml"
	odwatchConfig    = "deploy/odwatch.yaml"
)

func repoPath(p string) string { return filepath.Join(repoRoot, filepath.FromSlash(p)) }

func readRepoFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(repoPath(p))
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return b
}

func decodeYAML(t *testing.T, p string, v any) {
	t.Helper()
	if err := yaml.Unmarshal(readRepoFile(t, p), v); err != nil {
		t.Fatalf("parse %s: %v", p, err)
	}
}

// TestFilesWellFormed parses docker-compose.yml and every YAML and JSON file
// under deploy/ (testdata excluded: it holds deliberately bad inputs).
func TestFilesWellFormed(t *testing.T) {
	files := []string{composeFile}
	err := filepath.WalkDir(repoPath("deploy"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		switch filepath.Ext(p) {
		case ".yml", ".yaml", ".json", ".avsc":
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d deployment files: %v", len(files), files)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			b := readRepoFile(t, f)
			var v any
			switch filepath.Ext(f) {
			case ".json", ".avsc":
				err = json.Unmarshal(b, &v)
			default:
				err = yaml.Unmarshal(b, &v)
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if v == nil {
				t.Fatal("empty document")
			}
		})
	}
}

// composeDoc is the part of a compose file the tests look at.
type composeDoc struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Command     any               `yaml:"command"`
	Volumes     []any             `yaml:"volumes"`
	DependsOn   yaml.Node         `yaml:"depends_on"`
	Ports       []string          `yaml:"ports"`
	Environment map[string]string `yaml:"environment"`
	Restart     string            `yaml:"restart"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

func loadCompose(t *testing.T, p string) composeDoc {
	t.Helper()
	var c composeDoc
	decodeYAML(t, p, &c)
	if len(c.Services) == 0 {
		t.Fatalf("%s: no services", p)
	}
	return c
}

// versionTag matches tags that name a release: 4.1.0, v3.7.3,
// 1.26.8-bookworm. Moving tags (latest, stable, nonroot, 3) do not.
var versionTag = regexp.MustCompile(`^v?\d+\.\d+(\.\d+)*([-_.+][0-9A-Za-z.]+)*$`)

// checkImagePinned returns why ref is not pinned to an explicit version, or
// nil. Locally built images (built=true) only need a tag other than latest.
func checkImagePinned(ref string, built bool) error {
	if ref == "" {
		return errors.New("no image")
	}
	if i := strings.Index(ref, "@sha256:"); i >= 0 {
		return nil // a digest pins exactly
	}
	name, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	switch {
	case tag == "":
		return fmt.Errorf("image %s has no tag", name)
	case tag == "latest":
		return fmt.Errorf("image %s uses the moving tag latest", name)
	case built:
		return nil
	case !versionTag.MatchString(tag):
		return fmt.Errorf("image %s:%s is not pinned to a version", name, tag)
	}
	return nil
}

// composeImageProblems lists every service whose image is not pinned.
func composeImageProblems(c composeDoc) []string {
	var out []string
	for _, name := range sortedKeys(c.Services) {
		s := c.Services[name]
		if err := checkImagePinned(s.Image, s.Build != nil); err != nil {
			out = append(out, fmt.Sprintf("service %s: %v", name, err))
		}
	}
	return out
}

// dockerfileImageProblems lists every FROM whose base is not pinned; stage
// names and scratch are not images.
func dockerfileImageProblems(src []byte) []string {
	var out []string
	stages := map[string]bool{"scratch": true}
	sc := bufio.NewScanner(bytes.NewReader(src))
	froms := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		froms++
		args := f[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") { // --platform=...
			args = args[1:]
		}
		if len(args) == 0 {
			out = append(out, "FROM without an image")
			continue
		}
		ref := args[0]
		if !stages[strings.ToLower(ref)] {
			if err := checkImagePinned(ref, false); err != nil {
				out = append(out, err.Error())
			}
		}
		// A later FROM may name this stage.
		if len(args) >= 3 && strings.EqualFold(args[1], "AS") {
			stages[strings.ToLower(args[2])] = true
		}
	}
	if froms == 0 {
		out = append(out, "no FROM line")
	}
	return out
}

// TestImagesPinned: every compose image and every Dockerfile base image is
// pinned to an explicit version; the checkers themselves reject the bad
// examples in testdata.
func TestImagesPinned(t *testing.T) {
	if p := composeImageProblems(loadCompose(t, composeFile)); len(p) > 0 {
		t.Errorf("%s:\n  %s", composeFile, strings.Join(p, "\n  "))
	}
	if p := dockerfileImageProblems(readRepoFile(t, dockerfile)); len(p) > 0 {
		t.Errorf("%s:\n  %s", dockerfile, strings.Join(p, "\n  "))
	}

	tests := []struct {
		name  string
		check func(t *testing.T) []string
		want  []string // substrings, one per expected problem
	}{
		{"compose", func(t *testing.T) []string {
			return composeImageProblems(loadCompose(t, "deploy/testdata/compose-unpinned.yml"))
		}, []string{"service built: image odwatch uses the moving tag latest",
			"service latest: image prom/prometheus uses the moving tag latest",
			"service moving: image gcr.io/distroless/static-debian12:nonroot is not pinned",
			"service untagged: image grafana/grafana has no tag"}},
		{"dockerfile", func(t *testing.T) []string {
			return dockerfileImageProblems(readRepoFile(t, "deploy/testdata/Dockerfile.unpinned"))
		}, []string{"image golang has no tag", "image alpine uses the moving tag latest"}},
	}
	for _, tc := range tests {
		t.Run("rejects/"+tc.name, func(t *testing.T) {
			got := tc.check(t)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems %q, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// TestComposeReferences: every bind-mounted source exists in the repository,
// every named volume is declared, every depends_on names a service, and the
// pieces agree with each other (scrape target, metrics address, Grafana
// datasource and dashboard paths).
func TestComposeReferences(t *testing.T) {
	c := loadCompose(t, composeFile)
	mounts := map[string]string{} // container path -> repo path, all services
	for _, name := range sortedKeys(c.Services) {
		s := c.Services[name]
		for _, v := range s.Volumes {
			src, dst, err := parseVolume(v)
			if err != nil {
				t.Errorf("service %s: %v", name, err)
				continue
			}
			if !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") {
				if _, ok := c.Volumes[src]; !ok {
					t.Errorf("service %s: named volume %q is not declared under volumes:", name, src)
				}
				continue
			}
			if filepath.IsAbs(src) {
				t.Errorf("service %s: bind mount %s is outside the repository", name, src)
				continue
			}
			if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
				t.Errorf("service %s: bind mount source %s: %v", name, src, err)
			}
			mounts[dst] = filepath.ToSlash(filepath.Clean(src))
		}
		for _, dep := range dependsOn(t, s.DependsOn) {
			if _, ok := c.Services[dep]; !ok {
				t.Errorf("service %s depends on unknown service %q", name, dep)
			}
		}
	}

	// Prometheus scrapes the odwatch service on the port odwatch listens on.
	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	decodeYAML(t, prometheusConfig, &prom)
	var odwatchTargets []string
	for _, sc := range prom.ScrapeConfigs {
		if sc.JobName == "odwatch" {
			for _, st := range sc.StaticConfigs {
				odwatchTargets = append(odwatchTargets, st.Targets...)
			}
		}
	}
	var ocfg struct {
		MetricsAddr string `yaml:"metrics-addr"`
		StateDir    string `yaml:"state-dir"`
	}
	decodeYAML(t, odwatchConfig, &ocfg)
	_, metricsPort, err := net.SplitHostPort(ocfg.MetricsAddr)
	if err != nil {
		t.Fatalf("%s: metrics-addr %q: %v", odwatchConfig, ocfg.MetricsAddr, err)
	}
	if len(odwatchTargets) != 1 || odwatchTargets[0] != "odwatch:"+metricsPort {
		t.Errorf("%s: job odwatch targets %v, want [odwatch:%s] (metrics-addr of %s)", prometheusConfig, odwatchTargets, metricsPort, odwatchConfig)
	}
	if _, ok := c.Services["odwatch"]; !ok {
		t.Errorf("%s: no odwatch service for Prometheus to scrape", composeFile)
	}
	if mounts["/etc/odwatch/odwatch.yaml"] != odwatchConfig {
		t.Errorf("%s is not mounted at /etc/odwatch/odwatch.yaml (mounts: %v)", odwatchConfig, mounts)
	}

	// Grafana: the provider path is where the dashboards are mounted, and the
	// dashboard's panels use the provisioned datasource uid.
	var provider struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	decodeYAML(t, dashProviderFile, &provider)
	for _, p := range provider.Providers {
		if mounts[p.Options.Path] != "deploy/grafana/dashboards" {
			t.Errorf("%s: dashboard path %s is not the mount of deploy/grafana/dashboards", dashProviderFile, p.Options.Path)
		}
	}
	var ds struct {
		Datasources []struct {
			UID string `yaml:"uid"`
			URL string `yaml:"url"`
		} `yaml:"datasources"`
	}
	decodeYAML(t, datasourceFile, &ds)
	if len(ds.Datasources) != 1 {
		t.Fatalf("%s: want one datasource, got %d", datasourceFile, len(ds.Datasources))
	}
	if want := "http://prometheus:9090"; ds.Datasources[0].URL != want {
		t.Errorf("%s: url %s, want %s", datasourceFile, ds.Datasources[0].URL, want)
	}
	uids := map[string]bool{}
	collectDatasourceUIDs(decodeDashboard(t), uids)
	delete(uids, "-- Grafana --") // the built-in annotations source
	if len(uids) != 1 || !uids[ds.Datasources[0].UID] {
		t.Errorf("%s uses datasource uids %v, want only %q", dashboardFile, sortedKeys(uids), ds.Datasources[0].UID)
	}
}

// parseVolume returns the source and target of a compose volume entry in
// short ("src:dst[:mode]") or long (type/source/target) syntax.
func parseVolume(v any) (src, dst string, err error) {
	switch v := v.(type) {
	case string:
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			return "", "", fmt.Errorf("volume %q: want SOURCE:TARGET", v)
		}
		return parts[0], parts[1], nil
	case map[string]any:
		s, _ := v["source"].(string)
		d, _ := v["target"].(string)
		if s == "" || d == "" {
			return "", "", fmt.Errorf("volume %v: want source and target", v)
		}
		if v["type"] == "bind" && !strings.HasPrefix(s, ".") && !strings.HasPrefix(s, "/") {
			s = "./" + s
		}
		return s, d, nil
	}
	return "", "", fmt.Errorf("volume %v: unexpected form", v)
}

// dependsOn returns the service names of a depends_on list or map.
func dependsOn(t *testing.T, n yaml.Node) []string {
	t.Helper()
	switch n.Kind {
	case 0:
		return nil
	case yaml.SequenceNode:
		var names []string
		if err := n.Decode(&names); err != nil {
			t.Fatalf("depends_on: %v", err)
		}
		return names
	case yaml.MappingNode:
		var m map[string]any
		if err := n.Decode(&m); err != nil {
			t.Fatalf("depends_on: %v", err)
		}
		return sortedKeys(m)
	}
	t.Fatalf("depends_on: unexpected YAML kind %v", n.Kind)
	return nil
}

func decodeDashboard(t *testing.T) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(readRepoFile(t, dashboardFile), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

func collectDatasourceUIDs(v any, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		if ds, ok := v["datasource"].(map[string]any); ok {
			if uid, ok := ds["uid"].(string); ok {
				out[uid] = true
			}
		}
		for _, x := range v {
			collectDatasourceUIDs(x, out)
		}
	case []any:
		for _, x := range v {
			collectDatasourceUIDs(x, out)
		}
	}
}

// collectExprs returns every "expr" string in a decoded JSON/YAML tree.
func collectExprs(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		if e, ok := v["expr"].(string); ok {
			*out = append(*out, e)
		}
		for _, k := range sortedKeys(v) {
			collectExprs(v[k], out)
		}
	case []any:
		for _, x := range v {
			collectExprs(x, out)
		}
	}
}

// ruleFile is the Prometheus rule file format.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	var rf ruleFile
	decodeYAML(t, rulesFile, &rf)
	var out []rule
	for _, g := range rf.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rules", rulesFile)
	}
	return out
}

// TestAlertRulesComplete: every alert has a for:, a severity, and a summary
// and description that name what broke (the stream, and the dependency for
// dependency alerts); every alert has a promtool unit test.
func TestAlertRulesComplete(t *testing.T) {
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	decodeYAML(t, rulesTestFile, &tests)
	firing, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	severities := map[string]bool{"info": true, "warning": true, "critical": true}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			continue
		}
		t.Run(r.Alert, func(t *testing.T) {
			if r.For == "" {
				t.Error("no for:")
			}
			if !severities[r.Labels["severity"]] {
				t.Errorf("severity %q, want info, warning or critical", r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description"} {
				text := r.Annotations[a]
				if text == "" {
					t.Errorf("no %s annotation", a)
					continue
				}
				// up{} has no stream label: OdwatchDown names the instance.
				if want := "$labels.stream"; r.Alert != "OdwatchDown" && !strings.Contains(text, want) {
					t.Errorf("%s does not name %s: %q", a, want, text)
				}
				if dependencyExpr.MatchString(r.Expr) && !strings.Contains(text, "$labels.dependency") {
					t.Errorf("%s does not name $labels.dependency: %q", a, text)
				}
			}
			if !firing[r.Alert] {
				t.Errorf("%s has no promtool test case where it fires", rulesTestFile)
			}
			if !quiet[r.Alert] {
				t.Errorf("%s has no promtool test case where it stays quiet", rulesTestFile)
			}
		})
	}
}

// dependencyExpr matches expressions over per-dependency series, whose
// alerts must name the dependency.
var dependencyExpr = regexp.MustCompile(`\bodwatch_dependency_(error|violated)\b`)

// TestDependencyAlertFollowsTracker: the dependency alert fires on odwatch's
// own hysteresis state (odwatch_dependency_violated), not on the raw error
// against eps, which flaps for a dependency hovering around eps; and the
// dashboard shows the same state.
func TestDependencyAlertFollowsTracker(t *testing.T) {
	found := false
	for _, r := range loadRules(t) {
		if r.Alert != "OdwatchDependencyViolated" {
			continue
		}
		found = true
		if !strings.Contains(r.Expr, "odwatch_dependency_violated") {
			t.Errorf("OdwatchDependencyViolated does not use odwatch_dependency_violated: %s", r.Expr)
		}
		if strings.Contains(r.Expr, "odwatch_epsilon") {
			t.Errorf("OdwatchDependencyViolated compares with odwatch_epsilon (flaps around eps): %s", r.Expr)
		}
	}
	if !found {
		t.Fatalf("%s: no OdwatchDependencyViolated alert", rulesFile)
	}
	var exprs []string
	collectExprs(decodeDashboard(t), &exprs)
	if !slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, "odwatch_dependency_violated") }) {
		t.Errorf("%s: no panel shows odwatch_dependency_violated", dashboardFile)
	}
}

// TestPromtool runs promtool's config and rule checks and the rule unit
// tests, then breaks each alert in a copy of the rules and checks that the
// unit tests notice. Without promtool the test skips, except in CI.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool missing: .ci/run must install prometheus (Debian package prometheus carries promtool)")
		}
		t.Skip("promtool not on PATH (apt-get install prometheus); skipping promtool checks")
	}
	run := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(promtool, args...)
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{
		{"check", "config", prometheusConfig},
		{"check", "rules", rulesFile},
		{"test", "rules", rulesTestFile},
	} {
		t.Run(strings.Join(args[:2], "-"), func(t *testing.T) {
			if out, err := run(t, args...); err != nil {
				t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}

	// Mutation check: with one alert's expression replaced by one that never
	// fires, the unit tests must fail (each alert has a firing case that
	// really depends on its expression).
	var doc yaml.Node
	if err := yaml.Unmarshal(readRepoFile(t, rulesFile), &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			continue
		}
		t.Run("mutated/"+r.Alert, func(t *testing.T) {
			dir := t.TempDir()
			mutated, err := yaml.Marshal(replaceExpr(t, &doc, r.Alert, "vector(0) > 1"))
			if err != nil {
				t.Fatal(err)
			}
			for _, sub := range []string{"rules", "tests"} {
				if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "rules", filepath.Base(rulesFile)), mutated, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tests", filepath.Base(rulesTestFile)), readRepoFile(t, rulesTestFile), 0o644); err != nil {
				t.Fatal(err)
			}
			abs, err := filepath.Abs(filepath.Join(dir, "tests", filepath.Base(rulesTestFile)))
			if err != nil {
				t.Fatal(err)
			}
			out, err := run(t, "test", "rules", abs)
			if err == nil {
				t.Fatalf("promtool test rules passed with %s's expression broken:\n%s", r.Alert, out)
			}
			if !strings.Contains(out, r.Alert) {
				t.Errorf("promtool failed, but not on %s:\n%s", r.Alert, out)
			}
		})
	}
}

// replaceExpr returns a deep copy of the rule file document with the expr of
// alert replaced.
func replaceExpr(t *testing.T, doc *yaml.Node, alert, expr string) *yaml.Node {
	t.Helper()
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var cp yaml.Node
	if err := yaml.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	found := false
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			isAlert := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == "alert" && n.Content[i+1].Value == alert {
					isAlert = true
				}
			}
			if isAlert {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == "expr" {
						n.Content[i+1].Value = expr
						n.Content[i+1].Style = 0
						found = true
					}
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&cp)
	if !found {
		t.Fatalf("alert %s not found in %s", alert, rulesFile)
	}
	return &cp
}

// metricName matches odwatch metric names in PromQL.
var metricName = regexp.MustCompile(`\bodwatch_[a-zA-Z0-9_]+`)

// usedMetricNames returns the odwatch_* names used by the alert rules and the
// dashboard, with the file each is first used in.
func usedMetricNames(t *testing.T) map[string]string {
	t.Helper()
	used := map[string]string{}
	var exprs []string
	for _, r := range loadRules(t) {
		exprs = append(exprs, r.Expr)
	}
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			if _, ok := used[n]; !ok {
				used[n] = rulesFile
			}
		}
	}
	exprs = exprs[:0]
	collectExprs(decodeDashboard(t), &exprs)
	if len(exprs) < 10 {
		t.Fatalf("%s: found only %d expressions", dashboardFile, len(exprs))
	}
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			if _, ok := used[n]; !ok {
				used[n] = dashboardFile
			}
		}
	}
	return used
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestAmtool checks the Alertmanager configuration with amtool (Debian
// package prometheus-alertmanager) when it is installed.
func TestAmtool(t *testing.T) {
	amtool, err := exec.LookPath("amtool")
	if err != nil {
		t.Skip("amtool not on PATH (apt-get install prometheus-alertmanager); skipping the Alertmanager config check")
	}
	cmd := exec.Command(amtool, "check-config", "deploy/alertmanager/alertmanager.yml")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
}
