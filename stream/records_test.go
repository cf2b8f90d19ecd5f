package stream

import (
	"testing"

	"github.com/odwatch/odwatch/stream/decode"
)

func mustDecoder(t testing.TB, cfg decode.DecoderConfig) decode.Decoder {
	t.Helper()
	d, err := decode.NewDecoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
