package alerts

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/odwatch/odwatch/discovery"
)

// DependencyID is the project-wide identity of a dependency:
// discovery.Dependency.ID, the first 16 hex characters of the SHA-256 of a
// canonical text with the context sorted and an OC's two sides sorted, so
// that the same dependency found in windows whose column order differs keeps
// its id (a list-based OD keeps its lists' order). Kafka keys, the
// ce_subject header, event ids and the state store's history are keyed by
// it. It is a function here so that the stream and the tracker name one id.
func DependencyID(d discovery.Dependency) string { return d.ID() }

// EventID is the id of the event of type typ for a dependency in the window
// ending at stream sequence windowEnd: the first 32 hex characters of the
// SHA-256 of the length-prefixed fields. A replay of the same window emits
// the same id, so consumers can deduplicate.
func EventID(stream, dependencyID string, windowEnd uint64, typ EventType) string {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{"odwatch-event-v1", stream, dependencyID, string(typ)} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	binary.BigEndian.PutUint64(n[:], windowEnd)
	h.Write(n[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}
