package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit, when set at link time (go build -ldflags "-X
// main.version=v1.2.3 -X main.commit=abc123", as the Dockerfile does, whose
// build context has no .git), win over the build information, which lacks
// them in such builds.
var version, commit string

// writeVersion prints odwatch's version, the commit it was built from and
// the Go version, from the build information the Go toolchain embeds:
//
//	odwatch v0.0.0-20261130074741-9c5e4952f1a3+dirty
//	commit  9c5e4952f1a3... (2026-11-30T07:47:41Z, modified)
//	go      go1.26.8 linux/amd64
func writeVersion(w io.Writer) {
	ver, rev := "unknown", "unknown"
	var when string
	modified := false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			ver = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		ver = version
	}
	if commit != "" {
		rev, when, modified = commit, "", false
	}
	fmt.Fprintf(w, "odwatch %s\n", ver)
	switch {
	case when != "" && modified:
		fmt.Fprintf(w, "commit  %s (%s, modified)\n", rev, when)
	case when != "":
		fmt.Fprintf(w, "commit  %s (%s)\n", rev, when)
	default:
		fmt.Fprintf(w, "commit  %s\n", rev)
	}
	fmt.Fprintf(w, "go      %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
