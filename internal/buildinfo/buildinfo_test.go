package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/wfhq/wf", Version: "v0.0.0-20261201090000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := fromBuildInfo(bi)
	require.Equal(t, Info{
		Version:   "v0.0.0-20261201090000-0123456789ab+dirty",
		Commit:    "0123456789abcdef0123456789abcdef01234567-dirty",
		GoVersion: "go1.26.8",
	}, got)
	require.Equal(t, "wf v0.0.0-20261201090000-0123456789ab+dirty (commit 0123456789abcdef0123456789abcdef01234567-dirty, go1.26.8)", got.String())

	// A build outside a checkout says what it does not know.
	got = fromBuildInfo(&debug.BuildInfo{})
	require.Equal(t, Info{Version: Unknown, Commit: Unknown, GoVersion: runtime.Version()}, got)
}
