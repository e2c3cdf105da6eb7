package proccpu_test

import (
	"crypto/sha256"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/proccpu"
)

// TestCPU: this process's CPU time grows with work, /proc reads the same
// process and its parent, and a waited-for child's time is counted among
// the children's.
func TestCPU(t *testing.T) {
	before := proccpu.Self().CPU()
	// Spin until getrusage has counted 300 ms of CPU: /proc counts in
	// 10 ms ticks, so a fixed amount of work may round to no tick at all
	// on a fast machine.
	sum := sha256.Sum256(nil)
	for proccpu.Self().CPU()-before < 300*time.Millisecond {
		for range 10_000 {
			sum = sha256.Sum256(sum[:])
		}
	}
	require.Greater(t, proccpu.Self().CPU(), before)
	require.Positive(t, proccpu.TreeCPU(os.Getpid()))
	require.Equal(t, os.Getppid(), proccpu.Parent(os.Getpid()))
	require.Zero(t, proccpu.TreeCPU(-1))
	require.Zero(t, proccpu.Parent(-1))

	children := proccpu.Children().CPU()
	// A child that spins for a moment of CPU, then exits and is waited for.
	require.NoError(t, exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done").Run())
	require.Greater(t, proccpu.Children().CPU(), children)
}
