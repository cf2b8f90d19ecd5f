package state

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Key prefixes; see the package doc for the layout.
const (
	pfxWindow    = "w/"
	pfxOffset    = "o/"
	pfxSeq       = "n/"
	pfxTracker   = "t/"
	pfxHistory   = "h/"
	pfxOutbox    = "e/"
	pfxPending   = "x/"
	pfxDelivered = "d/"
)

func checkName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty %s", ErrInvalid, kind)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("%w: %s %q contains a NUL byte", ErrInvalid, kind, name)
	}
	return nil
}

// streamPrefix returns "<pfx><stream>\x00", the start of every key of the
// stream under pfx.
func streamPrefix(pfx, stream string) []byte {
	b := make([]byte, 0, len(pfx)+len(stream)+1+12)
	b = append(b, pfx...)
	b = append(b, stream...)
	return append(b, 0)
}

// prefixEnd returns the smallest key greater than every key with prefix p
// (p ends in 0x00 for all our stream prefixes, so incrementing works).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // unbounded
}

func appendWindowKey(b []byte, stream string, partition int32, offset int64) []byte {
	b = append(b, pfxWindow...)
	b = append(b, stream...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(partition))
	return binary.BigEndian.AppendUint64(b, uint64(offset))
}

func partitionOffsetKey(pfx, stream string, partition int32) []byte {
	b := streamPrefix(pfx, stream)
	return binary.BigEndian.AppendUint32(b, uint32(partition))
}

func seqKey(stream string) []byte     { return append([]byte(pfxSeq), stream...) }
func trackerKey(stream string) []byte { return append([]byte(pfxTracker), stream...) }

func outboxKey(stream string, order uint64) []byte {
	return binary.BigEndian.AppendUint64(streamPrefix(pfxOutbox, stream), order)
}

func idKey(pfx, stream, id string) []byte {
	return append(streamPrefix(pfx, stream), id...)
}
