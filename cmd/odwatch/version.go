package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// writeVersion prints odwatch's version, the commit it was built from and
// the Go version, from the build information the Go toolchain embeds:
//
//	odwatch v0.0.0-20261130074741-9c5e4952f1a3+dirty
//	commit  9c5e4952f1a3... (2026-11-30T07:47:41Z, modified)
//	go      go1.26.8 linux/amd64
func writeVersion(w io.Writer) {
	version, commit := "unknown", "unknown"
	var when string
	modified := false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	fmt.Fprintf(w, "odwatch %s\n", version)
	switch {
	case when != "" && modified:
		fmt.Fprintf(w, "commit  %s (%s, modified)\n", commit, when)
	case when != "":
		fmt.Fprintf(w, "commit  %s (%s)\n", commit, when)
	default:
		fmt.Fprintf(w, "commit  %s\n", commit)
	}
	fmt.Fprintf(w, "go      %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
