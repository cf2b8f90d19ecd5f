package kafkatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// Options configure a cluster. The zero value is one PLAINTEXT node.
type Options struct {
	// Nodes is the number of combined broker+controller nodes (default 1).
	Nodes int
	// ClientProtocol is the security protocol of the listener clients use
	// (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; default PLAINTEXT). The
	// brokers talk to each other, and Cluster.Admin to them, on a
	// separate PLAINTEXT listener.
	ClientProtocol string
	// Props are added to every node's server.properties, over the
	// defaults (e.g. listener.name.client.* for TLS and SASL).
	Props map[string]string
	// FormatArgs are added to the storage format command (e.g.
	// --add-scram 'SCRAM-SHA-256=[name=u,password=p]').
	FormatArgs []string
	// StartTimeout bounds the wait for the cluster to answer (default 3 min:
	// a 2-core CI machine running other tests starts a JVM slowly).
	StartTimeout time.Duration
}

// Cluster is a running set of nodes on loopback, owned by the test that
// started it: its methods are called from that test's goroutine (Node.Kill
// and Node.Stop also from others), and it is stopped at the test's cleanup.
type Cluster struct {
	Nodes []*Node
	opts  Options
	java  string
	id    string // KRaft cluster id
}

// Node is one broker+controller process. Its ports and data directory
// survive Stop and Start, so a restarted node is the same broker.
type Node struct {
	ID                                 int
	Dir                                string // config, data, server.log
	ClientPort, AdminPort, ControlPort int
	c                                  *Cluster

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start formats and starts a cluster on free loopback ports under
// t.TempDir() and waits until every node serves metadata. It skips t as
// Require does.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c := &Cluster{opts: opts, java: Require(t), id: clusterID()}
	if c.opts.Nodes == 0 {
		c.opts.Nodes = 1
	}
	if c.opts.ClientProtocol == "" {
		c.opts.ClientProtocol = "PLAINTEXT"
	}
	if c.opts.StartTimeout == 0 {
		c.opts.StartTimeout = 3 * time.Minute
	}
	base := t.TempDir()
	for i := range c.opts.Nodes {
		n := &Node{ID: i + 1, Dir: filepath.Join(base, fmt.Sprintf("node%d", i+1)), c: c}
		n.ClientPort, n.AdminPort, n.ControlPort = freePort(t), freePort(t), freePort(t)
		c.Nodes = append(c.Nodes, n)
	}
	t.Cleanup(func() { c.cleanup(t) })
	began := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(c.Nodes))
	for i, n := range c.Nodes {
		wg.Go(func() { errs[i] = n.format() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		if err := n.launch(); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitReady(t, c.opts.Nodes)
	t.Logf("kafka %s: %d node(s) up in %v (%s)", Version, len(c.Nodes), time.Since(began).Round(10*time.Millisecond), strings.Join(c.Brokers(), ","))
	return c
}

// Brokers are the client listeners' addresses.
func (c *Cluster) Brokers() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr())
	}
	return out
}

// Bootstrap is Brokers joined by commas, for --brokers and kcat -b.
func (c *Cluster) Bootstrap() string { return strings.Join(c.Brokers(), ",") }

// Addr is the node's client listener.
func (n *Node) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.ClientPort) }

// AdminAddr is the node's PLAINTEXT inter-broker listener, reachable
// without credentials whatever ClientProtocol is.
func (n *Node) AdminAddr() string { return "127.0.0.1:" + strconv.Itoa(n.AdminPort) }

// WaitReady waits until a running node's metadata lists want brokers.
func (c *Cluster) WaitReady(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(c.opts.StartTimeout)
	var expected []*Node
	for _, n := range c.Nodes {
		if n.Running() {
			expected = append(expected, n)
		}
	}
	for {
		// A node that dies while starting (a port taken, a bad property)
		// fails the wait now, with its log, rather than at the deadline.
		for _, n := range expected {
			if !n.Running() {
				t.Fatalf("kafka node %d exited while starting; end of its server.log:\n%s\nstdout.log:\n%s", n.ID, Tail(filepath.Join(n.Dir, "server.log"), 30), Tail(filepath.Join(n.Dir, "stdout.log"), 10))
			}
		}
		var last error
		for _, n := range expected {
			md, err := c.metadata(n.AdminAddr())
			if err == nil && len(md.Brokers) < want {
				err = fmt.Errorf("%d of %d brokers registered", len(md.Brokers), want)
			}
			if err == nil {
				err = c.clientsListening()
			}
			if err == nil {
				return
			}
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafka not ready after %v: %v (logs: %s)", c.opts.StartTimeout, last, c.Nodes[0].Dir)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// clientsListening checks that every running node accepts connections on
// its client listener: a restarted broker opens it seconds after the
// inter-broker one already answers.
func (c *Cluster) clientsListening() error {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		conn, err := net.DialTimeout("tcp", n.Addr(), time.Second)
		if err != nil {
			return err
		}
		conn.Close()
	}
	return nil
}

func (c *Cluster) metadata(addr string) (*kafka.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cl := client(addr, 3*time.Second)
	defer cl.Transport.(*kafka.Transport).CloseIdleConnections()
	return cl.Metadata(ctx, &kafka.MetadataRequest{})
}

// client has a transport of its own: kafka-go's default one pools
// connections and caches metadata across a broker's restart.
func client(addr string, timeout time.Duration) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(addr), Timeout: timeout, Transport: &kafka.Transport{MetadataTTL: time.Second}}
}

// Admin is a client of a running node's PLAINTEXT admin listener.
func (c *Cluster) Admin() *kafka.Client {
	for _, n := range c.Nodes {
		if n.Running() {
			return client(n.AdminAddr(), 30*time.Second)
		}
	}
	return client(c.Nodes[0].AdminAddr(), 30*time.Second)
}

// CreateTopic creates a topic replicated on every node (at most 3), with
// the given topic configs (e.g. cleanup.policy=compact), and waits until
// each partition has a leader.
func (c *Cluster) CreateTopic(t testing.TB, name string, partitions int, configs map[string]string) {
	t.Helper()
	tc := kafka.TopicConfig{Topic: name, NumPartitions: partitions, ReplicationFactor: min(len(c.Nodes), 3)}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: k, ConfigValue: configs[k]})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Admin().CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	if err == nil {
		err = res.Errors[name]
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	for {
		md, err := c.Admin().Metadata(ctx, &kafka.MetadataRequest{Topics: []string{name}})
		if err == nil && len(md.Topics) == 1 && len(md.Topics[0].Partitions) == partitions && leadersKnown(md.Topics[0]) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s has no leaders: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func leadersKnown(tp kafka.Topic) bool {
	for _, p := range tp.Partitions {
		if p.Error != nil || p.Leader.ID < 0 || p.Leader.Host == "" {
			return false
		}
	}
	return true
}

// Leader is the node leading partition p of topic.
func (c *Cluster) Leader(t testing.TB, topic string, p int) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := c.Admin().Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	for _, part := range md.Topics[0].Partitions {
		if part.ID == p {
			for _, n := range c.Nodes {
				if n.ID == part.Leader.ID {
					return n
				}
			}
		}
	}
	t.Fatalf("no leader for %s/%d", topic, p)
	return nil
}

// cleanup kills the nodes: their data goes with the temp dir, and a clean
// stop of a cluster that lost a node waits for a quorum that is gone.
func (c *Cluster) cleanup(t testing.TB) {
	for _, n := range c.Nodes {
		n.Kill()
	}
	if t.Failed() {
		for _, n := range c.Nodes {
			t.Logf("kafka node %d, end of %s:\n%s", n.ID, filepath.Join(n.Dir, "server.log"), Tail(filepath.Join(n.Dir, "server.log"), 40))
		}
	}
}

// Running reports whether the node's process is alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Start restarts a stopped node on its ports and data and waits until the
// cluster lists every node again.
func (n *Node) Start(t testing.TB) {
	t.Helper()
	if err := n.launch(); err != nil {
		t.Fatal(err)
	}
	n.c.WaitReady(t, len(n.c.Nodes))
}

// Stop shuts the node down cleanly (SIGTERM: controlled shutdown), or
// kills it when that takes over a minute. It is idempotent.
func (n *Node) Stop() { n.signal(syscall.SIGTERM, time.Minute) }

// Kill ends the node with SIGKILL: a crash, no controlled shutdown.
func (n *Node) Kill() { n.signal(syscall.SIGKILL, time.Minute) }

func (n *Node) signal(sig syscall.Signal, wait time.Duration) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (n *Node) launch() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	out, err := os.OpenFile(filepath.Join(n.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(n.c.java, append(jvmArgs(n.Dir), "kafka.Kafka", filepath.Join(n.Dir, "server.properties"))...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start kafka node %d: %w", n.ID, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(done)
	}()
	n.cmd, n.done = cmd, done
	return nil
}

// format writes the node's configuration and formats its KRaft storage.
func (n *Node) format() error {
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.Dir, "server.properties"), []byte(n.properties()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.Dir, "log4j2.properties"), []byte(log4j(n.Dir)), 0o644); err != nil {
		return err
	}
	args := append(jvmArgs(n.Dir), "kafka.tools.StorageTool", "format", "-t", n.c.id, "-c", filepath.Join(n.Dir, "server.properties"))
	args = append(args, n.c.opts.FormatArgs...)
	out, err := exec.Command(n.c.java, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kafka storage format of node %d: %v\n%s", n.ID, err, out)
	}
	return nil
}

// properties is server.properties: listeners CLIENT (ClientProtocol),
// ADMIN (PLAINTEXT, between brokers) and CONTROLLER; single-replica
// internal topics on one node, three-way replication on a cluster.
func (n *Node) properties() string {
	c := n.c
	var voters []string
	for _, m := range c.Nodes {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", m.ID, m.ControlPort))
	}
	rf := strconv.Itoa(min(len(c.Nodes), 3))
	minISR := strconv.Itoa(max(min(len(c.Nodes), 3)-1, 1))
	p := map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          strconv.Itoa(n.ID),
		"controller.quorum.voters":                         strings.Join(voters, ","),
		"listeners":                                        fmt.Sprintf("CLIENT://127.0.0.1:%d,ADMIN://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.ClientPort, n.AdminPort, n.ControlPort),
		"advertised.listeners":                             fmt.Sprintf("CLIENT://127.0.0.1:%d,ADMIN://127.0.0.1:%d", n.ClientPort, n.AdminPort),
		"listener.security.protocol.map":                   "CLIENT:" + c.opts.ClientProtocol + ",ADMIN:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.listener.names":                        "CONTROLLER",
		"inter.broker.listener.name":                       "ADMIN",
		"log.dirs":                                         filepath.Join(n.Dir, "data"),
		"num.partitions":                                   "1",
		"default.replication.factor":                       rf,
		"min.insync.replicas":                              minISR,
		"offsets.topic.replication.factor":                 rf,
		"offsets.topic.num.partitions":                     "3",
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    minISR,
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            minISR,
		"group.initial.rebalance.delay.ms":                 "0",
		"auto.create.topics.enable":                        "false",
	}
	maps.Copy(p, c.opts.Props)
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}

// jvmArgs keep a node small and quick to start: a JIT that stops at C1
// and the serial collector suit a test broker's light load on few cores.
func jvmArgs(dir string) []string {
	return []string{
		"-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(dir, "log4j2.properties"),
		"-cp", filepath.Join(LibsDir(), "*"),
	}
}

func log4j(dir string) string {
	return "appender.f.type=File\nappender.f.name=F\nappender.f.fileName=" + filepath.Join(dir, "server.log") +
		"\nappender.f.layout.type=PatternLayout\nappender.f.layout.pattern=[%d] %p %m (%c)%n\n" +
		"rootLogger.level=INFO\nrootLogger.appenderRef.f.ref=F\n"
}

// clusterID is a random KRaft cluster id (a base64url UUID, no padding)
// that does not start with '-' or '_' (the top bit of its first byte
// clear): the storage tool would take a leading '-' for an option.
func clusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[0] &= 0x7f
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Tail is the last lines of the file at path (for a failed test's log),
// or why it cannot be read.
func Tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(ls[max(len(ls)-lines, 0):], "\n")
}
