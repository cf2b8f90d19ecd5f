// Package kafkatest runs Apache Kafka (KRaft) on loopback for the tests that
// must see a real broker: one combined broker+controller node, or a cluster
// of them. The broker's jars come from Maven (pom.xml, the one place that
// pins the Kafka version); the tests that use it skip unless ODWATCH_KAFKA=real
// and Java and the jars are present, so a machine with only Go still passes
// `go test ./...`.
package kafkatest

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

//go:embed pom.xml
var pom string

// Version is the Kafka release the pom pins.
var Version = regexp.MustCompile(`<kafka\.version>([^<]+)</kafka\.version>`).FindStringSubmatch(pom)[1]

// LibsDir is where the broker's jars are: $ODWATCH_KAFKA_LIBS, else
// $HOME/.cache/odwatch/kafka-VERSION/libs (where .ci/run and
// scripts/kafka-local.sh copy them).
func LibsDir() string {
	if d := os.Getenv("ODWATCH_KAFKA_LIBS"); d != "" {
		return d
	}
	return filepath.Join(cacheDir("kafka-"+Version), "libs")
}

// cacheDir is $HOME/.cache/odwatch/name, where the fetched Java programs
// are kept between runs.
func cacheDir(name string) string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "odwatch", name)
}

// Java is the java binary the broker runs on: $JAVA_HOME/bin/java, else
// java on PATH.
func Java() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		p := filepath.Join(h, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath("java")
}

// Require skips t unless the real-Kafka suite is asked for
// (ODWATCH_KAFKA=real) and can run here (Java, the jars); it returns the
// java binary. Asked for but unable to run is a failure, not a skip, so
// that CI cannot pass without the suite.
func Require(t testing.TB) string {
	t.Helper()
	if os.Getenv("ODWATCH_KAFKA") != "real" {
		t.Skip("real Kafka tests: set ODWATCH_KAFKA=real (needs Java and the jars of internal/kafkatest/pom.xml)")
	}
	java, err := Java()
	if err != nil {
		t.Fatalf("ODWATCH_KAFKA=real but no java: %v", err)
	}
	jar := filepath.Join(LibsDir(), fmt.Sprintf("kafka_2.13-%s.jar", Version))
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("ODWATCH_KAFKA=real but %s is missing: run mvn -q -f internal/kafkatest/pom.xml dependency:copy-dependencies -DoutputDirectory=%s", jar, LibsDir())
	}
	return java
}
