package kafkatest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestVersionsAgree: the Kafka release the real-broker tests run (pom.xml)
// is the one the compose stack runs and the Dockerfile names, so that
// moving it is one edit of pom.xml plus the places this test lists.
func TestVersionsAgree(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, c := range []struct {
		file string
		re   *regexp.Regexp
	}{
		{"docker-compose.yml", regexp.MustCompile(`image: apache/kafka:(\S+)`)},
		{"Dockerfile", regexp.MustCompile(`Apache Kafka (\d+\.\d+\.\d+)`)},
	} {
		b, err := os.ReadFile(filepath.Join(root, c.file))
		if err != nil {
			t.Fatal(err)
		}
		ms := c.re.FindAllStringSubmatch(string(b), -1)
		if len(ms) == 0 {
			t.Errorf("%s names no Kafka version (%s)", c.file, c.re)
		}
		for _, m := range ms {
			if m[1] != Version {
				t.Errorf("%s names Kafka %s, pom.xml pins %s", c.file, m[1], Version)
			}
		}
	}
}

// TestRegistryVersionAgrees: the design note names the Apicurio Registry
// release registry-pom.xml pins.
func TestRegistryVersionAgrees(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	ms := regexp.MustCompile(`Apicurio Registry (\d+\.\d+\.\d+)`).FindAllStringSubmatch(string(b), -1)
	if len(ms) == 0 {
		t.Error("docs/DESIGN.md names no Apicurio Registry version")
	}
	for _, m := range ms {
		if m[1] != RegistryVersion {
			t.Errorf("docs/DESIGN.md names Apicurio Registry %s, registry-pom.xml pins %s", m[1], RegistryVersion)
		}
	}
}
