package codeindex

import "unsafe"

// prefetch asks the CPU to load the cache line at p without waiting for it
// (PREFETCHT0): unlike a load, it retires at once, so that any number of
// misses overlap.
//
//go:noescape
func prefetch(p unsafe.Pointer)
