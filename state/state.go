// Package state owns odwatch's durable store: a Pebble v2 database holding,
// per stream, the window records (keyed by partition/offset so a redelivered
// Kafka record overwrites itself), the consumed positions (next offset per
// partition and next arrival sequence number, written in the same synced
// batch as the records), the alerts tracker state, an outbox of events
// with delivered markers, and the status history (the rules' errors and
// the events, in rings).
//
// The store never interprets record values or tracker state: they are opaque
// bytes encoded by package stream and package alerts. A store that cannot be
// opened (corrupt, too new, wrong schema, locked) is reported as an error
// naming its path and matching ErrCorrupt, ErrVersion or ErrLocked with
// errors.Is; it is never wiped or recreated (SetAside moves it out of the
// way for a fresh start). An existing store is first vetted read-only: its
// write-ahead log against the mark of how far it was synced (walmark.go;
// Pebble drops a truncated log's tail silently), then every value read,
// which checks every block's checksum. So a store that is refused is left
// byte for byte as it was found, and most damage is found at Open. Damage
// found later, by a read or a background compaction, and Pebble's fatal
// conditions (Logger.Fatalf) never panic: the store records the failure,
// closes Failed, and every method returns it (ErrCorrupt or ErrFailed, one
// line naming the directory); Close still releases the lock.
//
// Growth: window records are bounded by Commit.EvictBelow; delivered
// markers grow with evaluations, so the caller prunes them with
// PruneDelivered. The status history (AppendHistory) is bounded by its rings: a
// slot is overwritten ring-size appends later and a dropped rule's ring is
// deleted. The per-dependency history older versions wrote (h/) is no
// longer written; DropLegacyHistory deletes it.
//
// Tables are written uncompressed. The window is a FIFO that Pebble writes
// about twice per record (a flush, then the compaction into the last level
// that drops what the next flush's range deletions cover), and compressing
// those tables was the larger part of that work, for tables the window
// bounds anyway.
//
// # Key layout (schema version 1)
//
// All keys start with a one-letter prefix and a slash, so the key space is
// readable in pebble tools and ordered by kind, then stream:
//
//	meta/schema                          schema version, ASCII ("1")
//	w/<stream>\x00<partition BE4><offset BE8>   window record: flags, uvarint seq, [varint unix nanos], value
//	o/<stream>\x00<partition BE4>        next offset to consume (BE8)
//	n/<stream>                           next arrival sequence number (BE8)
//	t/<stream>                           tracker: window end (BE8) + opaque state
//	h/<stream>\x00<dependency>\x00<window end BE8>  legacy history, no longer written (DropLegacyHistory):
//	                                     error (float64 bits BE8) + unix nanos (BE8)
//	e/<stream>\x00<order BE8>            pending outbox event: uvarint id length, id, payload
//	x/<stream>\x00<id>                   pending event id -> order (BE8)
//	d/<stream>\x00<id>                   delivered marker (unix nanos of delivery, BE8)
//	r/<stream>\x00<dependency>\x00<slot BE4>  status history, a ring per rule: window end (BE8), unix nanos (BE8),
//	                                     error (float64 bits BE8), uvarint removals, uvarint records, flags (1 = violated)
//	l/<stream>\x00<slot BE4>             status event log, a ring: append number (BE8) + opaque payload
//	q/<stream>                           ring heads: appends (BE8), events (BE8), last window end appended + 1 (BE8)
//
// Besides Pebble's files the directory holds odwatch-wal-mark (walmark.go).
//
// Stream names and dependency ids must not contain NUL bytes; partitions and
// offsets must be non-negative (Kafka never produces negative ones), which
// keeps the big-endian encodings order-preserving.
//
// # Metrics
//
// When Options.Registerer is set, Open registers (and Close unregisters):
//
//	odwatch_pebble_disk_usage_bytes          gauge   on-disk size of the store
//	odwatch_pebble_l0_files                  gauge   sstables in L0
//	odwatch_pebble_l0_sublevels              gauge   L0 sublevels (read amplification of L0)
//	odwatch_pebble_read_amplification        gauge   total read amplification
//	odwatch_pebble_memtable_size_bytes       gauge   bytes allocated by memtables
//	odwatch_pebble_compactions_total         counter compactions since open
//	odwatch_pebble_flushes_total             counter memtable flushes since open
//	odwatch_pebble_block_cache_size_bytes    gauge   bytes in the block cache
//	odwatch_pebble_block_cache_hits_total    counter block cache hits
//	odwatch_pebble_block_cache_misses_total  counter block cache misses
//	odwatch_state_commit_duration_seconds    histogram{op="apply"|"evaluation"|"delivered"|"prune"}
//	                                                 synced batch commit time (fsync included)
//
// The Pebble metrics are read from DB.Metrics on every scrape.
package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// SchemaVersion is the version of the key layout written by this package.
// A store holding another version is refused with ErrVersion.
const SchemaVersion = "1"

// Errors returned (wrapped, with the store path) by Open.
var (
	// ErrCorrupt: Pebble reports corruption or the manifest/CURRENT files
	// cannot be read.
	ErrCorrupt = errors.New("state store is corrupt")
	// ErrVersion: the store was written by a newer or unknown Pebble format,
	// or holds a different odwatch schema version.
	ErrVersion = errors.New("state store has an unsupported version")
	// ErrLocked: another process (or another Store in this process) holds
	// the directory lock.
	ErrLocked = errors.New("state store is locked by another process")
	// ErrFailed: Pebble hit a condition it cannot continue from (see
	// pebbleLogger.Fatalf); the store refuses further use.
	ErrFailed = errors.New("state store failed")
	// ErrClosed is returned by methods called after Close.
	ErrClosed = errors.New("state store is closed")
	// ErrInvalid wraps argument errors (bad stream name, negative offset...).
	ErrInvalid = errors.New("invalid state argument")
)

// Options configure Open. The zero value is usable.
type Options struct {
	// Logger receives Pebble's log lines (info at debug level) and its
	// flushes and compactions (at debug level). Nil means
	// slog.Default().
	Logger *slog.Logger
	// Registerer, when non-nil, receives the store's collectors.
	Registerer prometheus.Registerer
	// CacheSize is the Pebble block cache size in bytes; 0 means 64 MiB.
	CacheSize int64
	// memTableSize overrides memTableSize when > 0 (tests: small memtables
	// flush and compact a short run).
	memTableSize int64
}

// Store is an open state store. Its methods are safe for concurrent use.
type Store struct {
	db      *pebble.DB
	lock    *pebble.Lock
	dir     string
	log     *slog.Logger
	reg     prometheus.Registerer
	metrics *storeMetrics
	// fail holds the corruption or fatal condition Pebble reported, if
	// any; see failure.
	fail *failure
	// wal keeps the write-ahead log mark (walmark.go) current.
	wal *walMark

	// writeMu serialises the read-modify-write paths (outbox saves and
	// delivery marks) so their existence checks see a stable view.
	writeMu sync.Mutex

	closeMu sync.RWMutex
	closed  bool
}

const defaultCacheSize = 64 << 20

// memTableSize is the size of Pebble's memtables.
const memTableSize = 32 << 20

var keySchema = []byte("meta/schema")

// Open opens (creating if missing) the store in dir. An existing store is
// vetted first: opened read-only and read in full (every block's checksum),
// so that a damaged store is refused here with ErrCorrupt rather than found
// later by a read or a compaction.
func Open(dir string, opts Options) (*Store, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "state", "dir", dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state: create %s: %w", dir, err)
	}
	cacheSize := opts.CacheSize
	if cacheSize <= 0 {
		cacheSize = defaultCacheSize
	}
	cache := pebble.NewCache(cacheSize)
	defer cache.Unref() // the DB holds its own reference while open

	fail := newFailure()
	wal := &walMark{dir: dir}
	popts := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Cache:              cache,
		Logger:             pebbleLogger{log: log, dir: dir, fail: fail},
		EventListener:      eventListener(dir, log, fail, wal),
		// Larger memtables absorb a full window's churn between flushes;
		// the default 4 MiB flushes every few thousand records.
		MemTableSize: memTableSize,
	}
	if opts.memTableSize > 0 {
		popts.MemTableSize = uint64(opts.memTableSize)
	}
	// Tables are written uncompressed (see Growth in the package doc).
	for i := range popts.Levels {
		popts.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	lock, err := lockStore(dir)
	if err != nil {
		return nil, err
	}
	popts.Lock = lock
	existed, err := vetExisting(dir, popts, fail)
	if err == nil && !existed {
		err = beginCreation(dir)
	}
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	db, err := pebble.Open(dir, popts)
	if err != nil {
		_ = lock.Close()
		return nil, classifyOpenError(dir, err, fail)
	}
	s := &Store{db: db, lock: lock, dir: dir, log: log, reg: opts.Registerer, fail: fail, wal: wal}
	if err := s.initialise(existed); err != nil {
		_ = s.closeDB()
		return nil, err
	}
	return s, nil
}

// lockStore takes dir's lock itself: a lock conflict from another process
// surfaces from fcntl as a bare EAGAIN/EACCES that pebble.Open would not
// distinguish from other failures, so it is reported as ErrLocked here.
func lockStore(dir string) (*pebble.Lock, error) {
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("state: open %s: lock file: %w", dir, err)
		}
		return nil, fmt.Errorf("state: open %s: %w: %w", dir, ErrLocked, err)
	}
	return lock, nil
}

// vetExisting says whether dir holds a store and, when it does, vets it
// read-only first (its WAL mark, then every block): a read-write Open
// replays and rewrites the WAL and manifest, and a store we then refuse
// must be left exactly as we found it. A store whose creation a crash
// interrupted (creationUnfinished) is created again, as if absent.
func vetExisting(dir string, popts *pebble.Options, fail *failure) (existed bool, err error) {
	existed, err = storeExists(dir)
	if err != nil || !existed {
		return existed, err
	}
	if unfinished, err := creationUnfinished(dir); err != nil || unfinished {
		return false, err
	}
	if err := checkWALMark(dir); err != nil {
		return true, err
	}
	ro := *popts
	ro.ReadOnly = true
	return true, vet(dir, &ro, fail)
}

// initialise readies a just-opened store: the schema version (written to
// a fresh one, checked on one that existed), no failure reported while
// opening, the WAL mark, and the metrics.
func (s *Store) initialise(existed bool) error {
	fresh, err := checkSchema(s.db, s.dir, existed)
	if err != nil {
		return err
	}
	if fresh {
		if err := s.db.Set(keySchema, []byte(SchemaVersion), pebble.Sync); err != nil {
			return fmt.Errorf("state: open %s: write schema: %w", s.dir, err)
		}
	}
	if err := s.fail.get(); err != nil {
		return err
	}
	if err := s.wal.open(); err != nil {
		return err
	}
	if err := s.wal.update(); err != nil {
		return err
	}
	s.metrics = newStoreMetrics(s.db)
	if s.reg != nil {
		if err := s.metrics.register(s.reg); err != nil {
			return fmt.Errorf("state: register metrics for %s: %w", s.dir, err)
		}
	}
	return nil
}

// vet opens the existing store in dir read-only (ro.ReadOnly) and checks its
// schema and every stored value, so that a damaged block is found now.
func vet(dir string, ro *pebble.Options, fail *failure) error {
	db, err := pebble.Open(dir, ro)
	if err != nil {
		return classifyOpenError(dir, err, fail)
	}
	_, err = checkSchema(db, dir, true)
	if err == nil {
		err = readAll(db, dir)
	}
	if cerr := closePebble(db); err == nil && cerr != nil {
		err = fmt.Errorf("state: open %s: close read-only check: %w", dir, cerr)
	}
	if ferr := fail.get(); ferr != nil {
		return ferr
	}
	return err
}

// readAll reads every key and value of db, which verifies the checksum of
// every block holding live data.
func readAll(db *pebble.DB, dir string) error {
	it, err := db.NewIter(nil)
	if err != nil {
		return classifyReadError(dir, err)
	}
	var ferr error
	for ok := it.First(); ok; ok = it.Next() {
		if _, err := it.ValueAndErr(); err != nil {
			ferr = err
			break
		}
	}
	if err := it.Close(); ferr == nil {
		ferr = err
	}
	if ferr != nil {
		return classifyReadError(dir, ferr)
	}
	return nil
}

// classifyReadError names a read failure of an existing store: Pebble's
// corruption errors (checksum mismatches, missing or truncated files) are
// ErrCorrupt.
func classifyReadError(dir string, err error) error {
	if pebble.IsCorruptionError(err) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corruptError(dir, err.Error())
	}
	return fmt.Errorf("state: open %s: read: %w", dir, err)
}

// closePebble closes db; Pebble panics instead of returning an error on
// some states a damaged store leaves behind (references still held by a
// failed read), and the caller must still release the directory lock and
// report the damage, so such a panic becomes an error.
func closePebble(db *pebble.DB) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pebble close: %v", r)
		}
	}()
	return db.Close()
}

// closeDB closes the database, then releases the directory lock (Pebble
// does not release a lock it was handed).
func (s *Store) closeDB() error {
	err := closePebble(s.db)
	if werr := s.wal.close(); err == nil {
		err = werr
	}
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// classifyOpenError maps a pebble.Open failure to one of the package's
// sentinel errors, keeping the path and the original error in the message.
// A corruption Pebble reported through its event listener during the open
// (fail) wins.
func classifyOpenError(dir string, err error, fail *failure) error {
	if ferr := fail.get(); ferr != nil {
		return ferr
	}
	msg := err.Error()
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe) && errors.Is(pe.Err, fs.ErrNotExist) && filepath.Dir(pe.Path) == filepath.Clean(dir):
		return corruptError(dir, filepath.Base(pe.Path)+" is missing")
	case errors.Is(err, pebble.ErrDBDoesNotExist):
		// Only an existing store gets here (storeExists saw a manifest).
		return corruptError(dir, "its manifest marker (marker.manifest.*) is missing")
	case pebble.IsCorruptionError(err), errors.Is(err, fs.ErrNotExist),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, record.ErrUnexpectedEOF),
		errors.Is(err, record.ErrInvalidChunk), errors.Is(err, record.ErrZeroedChunk):
		// A missing file of an existing store, or a truncated or
		// garbled manifest (a decode error rather than ErrCorruption),
		// is damage to us.
		return corruptError(dir, msg)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("state: open %s: %w", dir, err)
	case strings.Contains(msg, "format major version"):
		// Pebble has no error value for a format it does not know.
		return fmt.Errorf("state: open %s: %w: %w", dir, ErrVersion, err)
	case strings.Contains(msg, "CURRENT"), strings.Contains(msg, "MANIFEST"),
		strings.Contains(msg, "manifest"), strings.Contains(msg, "corrupt"):
		// Other manifest decode failures carry no error value either.
		return corruptError(dir, msg)
	default:
		return fmt.Errorf("state: open %s: %w", dir, err)
	}
}

// storeExists reports whether dir already holds a Pebble store (a manifest
// or its marker), before Open gets a chance to create one.
func storeExists(dir string) (bool, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("state: open %s: %w", dir, err)
	}
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, "MANIFEST-") || strings.HasPrefix(n, "marker.manifest.") || n == "CURRENT" {
			return true, nil
		}
	}
	return false, nil
}

// checkSchema refuses a store holding data under another (or no) schema
// version, and reports fresh when the store is empty and new, so the caller
// writes the schema key. existed says whether the directory held a store
// before this Open: an existing store that comes up empty without its schema
// key lost its write-ahead log, and is reported rather than reinitialised.
func checkSchema(db *pebble.DB, dir string, existed bool) (fresh bool, err error) {
	v, closer, err := db.Get(keySchema)
	switch {
	case err == nil:
		got := string(v)
		_ = closer.Close()
		if got != SchemaVersion {
			return false, fmt.Errorf("state: open %s: %w: schema version %q, this build reads %q",
				dir, ErrVersion, got, SchemaVersion)
		}
		return false, nil
	case errors.Is(err, pebble.ErrNotFound):
	default:
		return false, fmt.Errorf("state: open %s: read schema: %w: %w", dir, ErrCorrupt, err)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		return false, fmt.Errorf("state: open %s: %w", dir, err)
	}
	empty := !it.First()
	if err := it.Close(); err != nil {
		return false, fmt.Errorf("state: open %s: scan: %w: %w", dir, ErrCorrupt, err)
	}
	if !empty {
		return false, fmt.Errorf("state: open %s: %w: store holds data but no schema version", dir, ErrVersion)
	}
	if existed {
		return false, fmt.Errorf("state: open %s: %w: existing store is empty and lacks its schema key "+
			"(write-ahead log lost or damaged?); if the directory was never used, remove it", dir, ErrCorrupt)
	}
	return true, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Close flushes nothing extra (every commit is already synced), unregisters
// the collectors and releases the directory lock, also after a failure
// (whose error it does not repeat). Calling Close twice is a no-op.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.reg != nil {
		s.metrics.unregister(s.reg)
	}
	if err := s.closeDB(); err != nil && s.fail.get() == nil {
		return fmt.Errorf("state: close %s: %w", s.dir, err)
	}
	return nil
}

// Failed is closed when the store found itself damaged (a corrupt block,
// a missing file) or Pebble hit a condition it cannot continue from, even
// in a background job; Err then returns why. Every method fails from then
// on, so the owner stops and closes the store.
func (s *Store) Failed() <-chan struct{} { return s.fail.done }

// Err returns the failure behind Failed (matching ErrCorrupt or ErrFailed),
// or nil while the store is healthy.
func (s *Store) Err() error { return s.fail.get() }

// acquire guards a method against a concurrent Close and against use after
// a failure; release with the returned func.
func (s *Store) acquire() (func(), error) {
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return nil, fmt.Errorf("state %s: %w", s.dir, ErrClosed)
	}
	if err := s.fail.get(); err != nil {
		s.closeMu.RUnlock()
		return nil, err
	}
	return s.closeMu.RUnlock, nil
}

// storeErr is the error to return for err, a failed Pebble call wrapped with
// the operation: the store's failure when one was recorded (the corruption
// the failed read just reported, with the damaged file), a corruption Pebble
// returned without reporting it, recorded now, or err itself.
func (s *Store) storeErr(err error) error {
	if ferr := s.fail.get(); ferr != nil {
		return ferr
	}
	if pebble.IsCorruptionError(err) {
		s.fail.set(corruptError(s.dir, err.Error()))
		return s.fail.get()
	}
	return err
}

// acquireStream is acquire for a method of one stream: it also checks the
// stream name, naming the operation op in the error.
func (s *Store) acquireStream(op, stream string) (func(), error) {
	release, err := s.acquire()
	if err != nil {
		return nil, err
	}
	if err := checkName("stream", stream); err != nil {
		release()
		return nil, fmt.Errorf("state: %s: %w", op, err)
	}
	return release, nil
}

// scanPrefix iterates keys in [lower, upper) calling fn with key and value
// (valid only during the call). ctx is checked every 1024 keys.
func (s *Store) scanPrefix(ctx context.Context, lower, upper []byte, fn func(k, v []byte) error) (ferr error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return s.storeErr(fmt.Errorf("state %s: iterate: %w", s.dir, err))
	}
	// Closed even when fn panics: an iterator left open makes Pebble's
	// Close fail.
	defer func() {
		if err := it.Close(); err != nil && ferr == nil {
			ferr = s.storeErr(fmt.Errorf("state %s: iterate: %w", s.dir, err))
		}
	}()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n&1023 == 0 && ctx != nil {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return s.storeErr(fmt.Errorf("state %s: read %q: %w", s.dir, it.Key(), err))
		}
		if err := fn(it.Key(), v); err != nil {
			return err
		}
	}
	return nil
}

// get returns a copy of the value at key, or nil, false when absent.
func (s *Store) get(key []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.storeErr(fmt.Errorf("state %s: get %q: %w", s.dir, key, err))
	}
	out := bytes.Clone(v)
	_ = closer.Close()
	return out, true, nil
}
