package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// The write-ahead log mark is a witness, outside the log, of how far the
// store's write-ahead log was synced. Pebble cannot tell a log truncated
// after the fact from the torn tail a crash leaves (both end in an
// incomplete record, which it drops silently), so a truncated or deleted
// log would otherwise lose synced commits without a word. After every
// synced commit the store overwrites the mark (file walMarkName: the log's
// file name and its size after the commit, with a checksum) without
// syncing it: after a crash the mark is the latest or an older one, never
// ahead of what the log holds durably, and a torn mark fails its checksum
// and is ignored. Open refuses a store whose log is shorter than its mark
// says, or missing while no newer log exists. The mark file is created
// empty before a new store's files (beginCreation): still empty, it says
// that a crash interrupted the store's first Open.
const walMarkName = "odwatch-wal-mark"

var walCRC = crc32.MakeTable(crc32.Castagnoli)

// walMark tracks the current write-ahead log (set by Pebble's WALCreated
// event) and writes the mark.
type walMark struct {
	dir string

	mu       sync.Mutex
	f        *os.File
	cur      string // base name of the current log
	lastName string // what the mark file holds
	lastSize int64
	err      error // first failure to write the mark (detection degrades, commits go on)
}

// created is the WALCreated event handler.
func (w *walMark) created(path string) {
	w.mu.Lock()
	w.cur = filepath.Base(path)
	w.mu.Unlock()
}

// open opens (creating) the mark file of a store just opened read-write.
func (w *walMark) open() error {
	f, err := os.OpenFile(filepath.Join(w.dir, walMarkName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("state: open %s: write-ahead log mark: %w", w.dir, err)
	}
	w.mu.Lock()
	w.f = f
	w.mu.Unlock()
	return nil
}

// update records the current log's size, after a synced commit. A failure
// is remembered and returned once; it does not fail the commit, which is
// durable.
func (w *walMark) update() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil || w.cur == "" || w.err != nil {
		return nil
	}
	fi, err := os.Stat(filepath.Join(w.dir, w.cur))
	if err != nil {
		// Rotated away between the event and now: the next commit
		// records the new log.
		return nil
	}
	if w.cur == w.lastName && fi.Size() == w.lastSize {
		return nil
	}
	if _, err := w.f.WriteAt(encodeWALMark(w.cur, fi.Size()), 0); err != nil {
		w.err = fmt.Errorf("state %s: write-ahead log mark: %w", w.dir, err)
		return w.err
	}
	w.lastName, w.lastSize = w.cur, fi.Size()
	return nil
}

func (w *walMark) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// encodeWALMark: name length (1 byte), name, size (BE8), CRC-32C of those.
func encodeWALMark(name string, size int64) []byte {
	b := append([]byte{byte(len(name))}, name...)
	b = binary.BigEndian.AppendUint64(b, uint64(size))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, walCRC))
}

// decodeWALMark returns the mark in b, or ok false for no valid mark.
func decodeWALMark(b []byte) (name string, size int64, ok bool) {
	if len(b) < 1 {
		return "", 0, false
	}
	n := int(b[0])
	if n == 0 || len(b) < 1+n+8+4 {
		return "", 0, false
	}
	body := b[:1+n+8]
	if crc32.Checksum(body, walCRC) != binary.BigEndian.Uint32(b[1+n+8:]) {
		return "", 0, false
	}
	return string(b[1 : 1+n]), int64(binary.BigEndian.Uint64(b[1+n:])), true
}

// beginCreation creates the empty mark file of a store about to be
// created, before Pebble writes any of its files. Its first Open writes
// the schema key (synced) and then the mark, so a mark file still empty
// says that a crash interrupted that Open: the store holds nothing (at
// most the schema key), and Open creates it again rather than report an
// existing store that lost its write-ahead log (which a store without a
// mark file, or with a mark, that comes up empty is).
func beginCreation(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, walMarkName), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("state: create %s: write-ahead log mark: %w", dir, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("state: create %s: write-ahead log mark: %w", dir, err)
	}
	return nil
}

// creationUnfinished reports whether the store in dir is one whose first
// Open a crash interrupted: its mark file exists and is empty
// (beginCreation).
func creationUnfinished(dir string) (bool, error) {
	fi, err := os.Stat(filepath.Join(dir, walMarkName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("state: open %s: write-ahead log mark: %w", dir, err)
	}
	return fi.Size() == 0, nil
}

// checkWALMark compares an existing store's write-ahead log with its mark,
// before Pebble replays the log.
func checkWALMark(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, walMarkName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // written by an older build, or never committed to
	}
	if err != nil {
		return fmt.Errorf("state: open %s: write-ahead log mark: %w", dir, err)
	}
	name, size, ok := decodeWALMark(b)
	if !ok {
		return nil // torn by a crash: no evidence either way
	}
	fi, err := os.Stat(filepath.Join(dir, name))
	switch {
	case err == nil:
		if fi.Size() < size {
			return corruptError(dir, fmt.Sprintf("write-ahead log %s is truncated: %d bytes, %d were synced to it", name, fi.Size(), size))
		}
		return nil
	case errors.Is(err, fs.ErrNotExist):
		newer, lerr := newerLogExists(dir, name)
		if lerr != nil {
			return fmt.Errorf("state: open %s: %w", dir, lerr)
		}
		if !newer {
			return corruptError(dir, fmt.Sprintf("write-ahead log %s is missing (%d bytes were synced to it)", name, size))
		}
		return nil // flushed and removed after a newer log took over
	default:
		return fmt.Errorf("state: open %s: %w", dir, err)
	}
}

// newerLogExists reports whether dir holds a write-ahead log numbered above
// the log named name.
func newerLogExists(dir, name string) (bool, error) {
	num, ok := logNumber(name)
	if !ok {
		return true, nil // not a name we understand: give it the benefit
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if n, ok := logNumber(e.Name()); ok && n > num {
			return true, nil
		}
	}
	return false, nil
}

// logNumber parses Pebble's log file names, "000012.log" (or
// "000012-001.log").
func logNumber(name string) (uint64, bool) {
	stem, ok := strings.CutSuffix(name, ".log")
	if !ok {
		return 0, false
	}
	stem, _, _ = strings.Cut(stem, "-")
	n, err := strconv.ParseUint(stem, 10, 64)
	return n, err == nil
}
