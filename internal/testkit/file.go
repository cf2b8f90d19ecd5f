package testkit

import (
	"os"
	"testing"
)

// ZeroBytes overwrites n bytes of file with zeros, starting at the
// file's size divided by div (2: its middle).
func ZeroBytes(t testing.TB, file string, n int, div int64) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, n), fi.Size()/div); err != nil {
		t.Fatal(err)
	}
}
