package kafkaread

import "github.com/segmentio/kafka-go"

// MaxMessageBytes bounds a batch of the monitor's writers (BatchBytes of
// the dead-letter and state writers) and is the in-process broker's
// message.max.bytes (internal/demo): large enough that a test can produce a
// 5 MB record and see odwatch reject it and dead-letter it whole, rather
// than the broker.
const MaxMessageBytes = 16 << 20

// Transport is a transport of the caller's own, with the dialer's TLS
// and SASL settings when dialer is not nil; the caller closes it
// (CloseIdleConnections). A client without one shares
// kafka.DefaultTransport, whose metadata of a broker address is cached for
// the process's life and refreshed every 6 s: a topic created meanwhile
// (by another member, or on a new broker at a recycled address) reads as
// Unknown Topic Or Partition, which Scan would take for a topic never
// written to, and a writer spreads records over a stale partition count.
// A transport of its own starts from fresh metadata.
func Transport(dialer *kafka.Dialer) *kafka.Transport {
	if dialer == nil {
		return &kafka.Transport{}
	}
	return transportFor(dialer)
}

// transportFor builds a writer Transport using the dialer's TLS and SASL
// settings.
func transportFor(d *kafka.Dialer) *kafka.Transport {
	t := &kafka.Transport{TLS: d.TLS, SASL: d.SASLMechanism, ClientID: d.ClientID}
	if d.Timeout > 0 {
		t.DialTimeout = d.Timeout
	}
	return t
}
