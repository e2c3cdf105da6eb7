// Package buildinfo says which wf is running: its version, the commit it was
// built from and the Go version, read from the build information the Go
// toolchain embeds in every binary (runtime/debug). `wf --version`,
// GET /healthz and the wf_build_info metric all say the same.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Unknown stands for what the build information does not say (a test
// binary, a build outside a git checkout, -buildvcs=false).
const Unknown = "unknown"

// Info describes one build of wf.
type Info struct {
	// Version is the module version: a tag such as v1.2.0, a pseudo-version
	// for a build from a checkout, or "(devel)".
	Version string `json:"version"`
	// Commit is the git revision built from, with "-dirty" when the checkout
	// had uncommitted changes.
	Commit string `json:"commit"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"go_version"`
}

// Read returns the running binary's build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: Unknown, Commit: Unknown, GoVersion: runtime.Version()}
	}
	return fromBuildInfo(bi)
}

// fromBuildInfo picks the fields of bi.
func fromBuildInfo(bi *debug.BuildInfo) Info {
	info := Info{Version: bi.Main.Version, Commit: Unknown, GoVersion: bi.GoVersion}
	if info.Version == "" {
		info.Version = Unknown
	}
	if info.GoVersion == "" {
		info.GoVersion = runtime.Version()
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && info.Commit != Unknown {
		info.Commit += "-dirty"
	}
	return info
}

// String is the line `wf --version` prints.
func (i Info) String() string {
	return fmt.Sprintf("wf %s (commit %s, %s)", i.Version, i.Commit, i.GoVersion)
}
