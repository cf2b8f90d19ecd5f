package kafkatest

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A port of a broker is chosen before the JVM binds it, seconds later. A
// port the kernel just handed to a listener on port 0 comes from the
// ephemeral range, the same range every outgoing connection of the test
// (kcat, odwatch, the other nodes) takes its local port from, so one of
// them may hold it by the time the broker binds (seen in CI: a node of a
// 3-node cluster failing with "Address already in use"). Ports are
// therefore drawn below the ephemeral range, where the kernel assigns
// none, and never handed out twice by one test process.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// lowestListenPort is the bottom of the range ports are drawn from.
const lowestListenPort = 20000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// FreeAddr is a loopback address with a port free a moment ago (see
// freePort).
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(freePort(t))
}

// freePort is a loopback port that was free a moment ago, below the
// ephemeral range when it leaves room, and not handed out before by this
// process.
func freePort(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	if hi := ephemeralLow(); hi-lowestListenPort >= 1000 {
		for range 1000 {
			p := lowestListenPort + rand.IntN(hi-lowestListenPort)
			if !handedOut.ports[p] && bindable(p) {
				handedOut.ports[p] = true
				return p
			}
		}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[p] {
			handedOut.ports[p] = true
			return p
		}
	}
	t.Fatal("no free loopback port")
	return 0
}

func bindable(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
