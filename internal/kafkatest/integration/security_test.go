package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/kafkatest"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestSASLSCRAMOverTLS: a broker whose client listener is SASL_SSL with
// SCRAM-SHA-512 (a PEM certificate for 127.0.0.1 from a test CA). odwatch
// with the CA and the right password consumes and evaluates; with a wrong
// password it stops with exit status 1 and a one-line error naming the
// authentication failure.
func TestSASLSCRAMOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca, serverPEM := testCertificates(t, dir)
	jaas := "org.apache.kafka.common.security.scram.ScramLoginModule required;"
	c := kafkatest.Start(t, kafkatest.Options{
		ClientProtocol: "SASL_SSL",
		Props: map[string]string{
			"sasl.enabled.mechanisms":                             "SCRAM-SHA-512",
			"listener.name.client.scram-sha-512.sasl.jaas.config": jaas,
			"listener.name.client.ssl.keystore.type":              "PEM",
			"listener.name.client.ssl.keystore.location":          serverPEM,
		},
		FormatArgs: []string{"--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]"},
	})
	c.CreateTopic(t, "sec", 1, nil)
	// The generator has no TLS or SASL flags: it writes on the PLAINTEXT
	// inter-broker listener.
	generate(t, c.Nodes[0].AdminAddr(), "sec", "--count", "1000", "--clean", "1000", "--rate", "0", "--seed", "1")
	secret := filepath.Join(dir, "password")
	if err := os.WriteFile(secret, []byte("alice-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(password string) []string {
		return []string{"--brokers", c.Bootstrap(), "--topic", "sec", "--group", "sec", "--state-dir", t.TempDir(),
			"--window", "500", "--tls", "--tls-ca", ca, "--sasl-mechanism", "scram-sha-512",
			"--sasl-username", "alice", "--sasl-password-file", password}
	}
	p := startOdwatch(t, "odwatch", args(secret)...)
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "evaluated over SASL_SSL", evaluatedTo(p, "sec", 999))

	wrong := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrong, []byte("not-the-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, odwatchBin(t), append([]string{"run", "--metrics-addr", ""}, args(wrong)...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if ctx.Err() != nil || !asExit(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("with a wrong password: %v (context %v), want exit status 1; stderr:\n%s", err, ctx.Err(), stderr.String())
	}
	var errs []string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.Contains(l, "level=ERROR") || strings.HasPrefix(l, "odwatch") {
			errs = append(errs, l)
		}
	}
	if len(errs) != 1 || !strings.Contains(strings.ToLower(errs[0]), "authentication") {
		t.Errorf("with a wrong password, want one error line naming the authentication failure; stderr:\n%s", stderr.String())
	}
	t.Logf("wrong password: %s", errs)
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

// testCertificates writes a CA (ca.pem) and, for the broker, a PEM key
// store holding its key and a certificate for 127.0.0.1 signed by the CA
// (server.pem).
func testCertificates(t *testing.T, dir string) (ca, server string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "odwatch test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ca, server = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem")
	var store bytes.Buffer
	_ = pem.Encode(&store, &pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	_ = pem.Encode(&store, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(server, store.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return ca, server
}
