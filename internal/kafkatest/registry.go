package kafkatest

import (
	"bufio"
	_ "embed"
	"fmt"
	"net/http"
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
)

//go:embed registry-pom.xml
var registryPom string

// RegistryVersion is the Apicurio Registry release registry-pom.xml pins.
var RegistryVersion = regexp.MustCompile(`<apicurio\.version>([^<]+)</apicurio\.version>`).FindStringSubmatch(registryPom)[1]

// registryMinJava is the oldest Java the registry's classes run on.
const registryMinJava = 21

// RegistryDir is where the registry's distribution is unpacked:
// $ODWATCH_REGISTRY_DIR, else $HOME/.cache/odwatch/apicurio-registry-VERSION
// (where .ci/run and scripts/kafka-local.sh fetch-registry put it).
func RegistryDir() string {
	if d := os.Getenv("ODWATCH_REGISTRY_DIR"); d != "" {
		return d
	}
	return cacheDir("apicurio-registry-" + RegistryVersion)
}

// RegistryJava is a java binary of release 21 or later for the registry:
// $ODWATCH_REGISTRY_JAVA, else Java() when it is recent enough, else the
// newest JDK under /usr/lib/jvm (a machine's default java may be older).
func RegistryJava() (string, error) {
	if p := os.Getenv("ODWATCH_REGISTRY_JAVA"); p != "" {
		return p, nil
	}
	var candidates []string
	if p, err := Java(); err == nil {
		candidates = append(candidates, p)
	}
	jdks, _ := filepath.Glob("/usr/lib/jvm/*/bin/java")
	slices.SortFunc(jdks, func(a, b string) int { return javaRelease(b) - javaRelease(a) })
	for _, p := range append(candidates, jdks...) {
		if javaRelease(p) >= registryMinJava {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Java %d or later (set ODWATCH_REGISTRY_JAVA)", registryMinJava)
}

// javaRelease is the major release of the JDK or JRE a java binary belongs
// to, from the release file at its home, or 0 when that cannot be read.
func javaRelease(java string) int {
	bin, err := filepath.EvalSymlinks(java)
	if err != nil {
		return 0
	}
	f, err := os.Open(filepath.Join(filepath.Dir(filepath.Dir(bin)), "release"))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "JAVA_VERSION="); ok {
			major, _, _ := strings.Cut(strings.Trim(v, `"`), ".")
			n, _ := strconv.Atoi(major)
			return n
		}
	}
	return 0
}

// RequireRegistry skips t as Require does, and fails it when the suite is
// asked for but the registry cannot run here; it returns the java binary.
func RequireRegistry(t testing.TB) string {
	t.Helper()
	Require(t)
	java, err := RegistryJava()
	if err != nil {
		t.Fatalf("ODWATCH_KAFKA=real but the schema registry cannot run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(RegistryDir(), "quarkus-run.jar")); err != nil {
		t.Fatalf("ODWATCH_KAFKA=real but Apicurio Registry %s is missing: run scripts/kafka-local.sh fetch-registry (%v)", RegistryVersion, err)
	}
	return java
}

// Registry is an Apicurio Registry process on loopback with in-memory
// storage, owned by the test that started it and stopped at its cleanup.
type Registry struct {
	// URL is the base of the Confluent-compatible API, the URL odwatch's
	// --registry and --events-registry take.
	URL  string
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// StartRegistry starts a registry on free loopback ports, its log in
// t.TempDir(), and waits until its Confluent-compatible API answers. It
// skips t as RequireRegistry does.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	java := RequireRegistry(t)
	dir, port := t.TempDir(), strconv.Itoa(freePort(t))
	r := &Registry{URL: "http://127.0.0.1:" + port + "/apis/ccompat/v7", log: filepath.Join(dir, "registry.log"), done: make(chan struct{})}
	out, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(java, registryArgs(dir, port, strconv.Itoa(freePort(t)))...)
	r.cmd.Dir, r.cmd.Stdout, r.cmd.Stderr = dir, out, out
	began := time.Now()
	if err := r.cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("start the schema registry: %v", err)
	}
	go func() {
		_ = r.cmd.Wait()
		out.Close()
		close(r.done)
	}()
	t.Cleanup(func() { r.stop(t) })
	if err := r.waitReady(3 * time.Minute); err != nil {
		t.Fatalf("%v; end of %s:\n%s", err, r.log, Tail(r.log, 40))
	}
	t.Logf("apicurio registry %s up in %v (%s)", RegistryVersion, time.Since(began).Round(10*time.Millisecond), r.URL)
	return r
}

// registryArgs keep the registry on loopback (its management interface,
// health and metrics, too) and small: the serial collector and a JIT that
// stops at C1 suit a test's few requests on few cores.
func registryArgs(dir, port, managementPort string) []string {
	return []string{
		"-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dquarkus.http.host=127.0.0.1", "-Dquarkus.http.port=" + port,
		"-Dquarkus.management.host=127.0.0.1", "-Dquarkus.management.port=" + managementPort,
		"-Dapicurio.storage.snapshot.location=" + dir, "-Dapicurio.import.work-dir=" + dir,
		"-jar", filepath.Join(RegistryDir(), "quarkus-run.jar"),
	}
}

// waitReady polls the subjects list until it answers 200, the process
// exits, or timeout passes.
func (r *Registry) waitReady(timeout time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		if resp, err := c.Get(r.URL + "/subjects"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-r.done:
			return fmt.Errorf("the schema registry exited before it answered")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the schema registry did not answer %s/subjects within %v", r.URL, timeout)
		}
	}
}

// stop ends the registry cleanly (SIGTERM), or kills it when that takes
// over 30 s, and logs the end of its log when t failed.
func (r *Registry) stop(t testing.TB) {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	if t.Failed() {
		t.Logf("schema registry, end of %s:\n%s", r.log, Tail(r.log, 40))
	}
}
