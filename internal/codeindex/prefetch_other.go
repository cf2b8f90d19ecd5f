//go:build !amd64

package codeindex

import "unsafe"

// prefetch does nothing where no prefetch instruction is wired up.
func prefetch(unsafe.Pointer) {}
