package alerts

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/odwatch/odwatch/discovery"
)

// DependencyID is the project-wide identity of a dependency: the first 16 hex
// characters of the SHA-256 of a canonical encoding of it. It does not depend
// on the order of the context columns, nor on which side of a symmetric order
// compatibility comes first, so the same dependency found in windows whose
// column order differs keeps its id.
//
// Canonical encoding: a sequence of length-prefixed strings (decimal length,
// ':', bytes), which cannot be confused whatever the column names contain:
//
//	OFD:     "ofd", "ctx", n, context sorted..., "rhs", RHS
//	OC:      "oc",  "ctx", n, context sorted..., min(Left,Right), max(Left,Right), polarity ("asc"|"desc")
//	list OD: "od",  "lhs", n, LHSList in order..., "rhs", m, RHSList in order...
//
// It is what Kafka keys, the ce_subject header and event ids are built from.
func DependencyID(d discovery.Dependency) string {
	var b []byte
	put := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	putList := func(l []string) {
		put(strconv.Itoa(len(l)))
		for _, s := range l {
			put(s)
		}
	}
	switch d.Kind {
	case discovery.KindOFD:
		put("ofd")
		put("ctx")
		putList(sortedCopy(d.Context))
		put("rhs")
		put(d.RHS)
	case discovery.KindOC:
		put("oc")
		put("ctx")
		putList(sortedCopy(d.Context))
		l, r := d.Left, d.Right
		if r < l {
			l, r = r, l
		}
		put(l)
		put(r)
		put(d.Polarity.String())
	case discovery.KindListOD:
		put("od")
		put("lhs")
		putList(d.LHSList)
		put("rhs")
		putList(d.RHSList)
	default:
		put(d.Kind.String())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

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
