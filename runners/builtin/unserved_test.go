package builtin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/runners/builtin"
)

// TestMarkUnserved: a name marked unserved is not looked up, says why, is
// kept by a clone, and a later Register replaces the mark; a registered
// name cannot be marked, and a mark needs a name and a reason.
func TestMarkUnserved(t *testing.T) {
	t.Parallel()
	reg := builtin.NewRegistry()
	require.NoError(t, reg.MarkUnserved("cloud", "cloud.project is not set"))
	_, ok := reg.Lookup("cloud")
	require.False(t, ok)
	reason, ok := reg.Unserved("cloud")
	require.True(t, ok)
	require.Equal(t, "cloud.project is not set", reason)
	require.NotContains(t, reg.Names(), "cloud")

	clone := reg.Clone()
	_, ok = clone.Unserved("cloud")
	require.True(t, ok, "a clone keeps the marks")

	require.NoError(t, reg.Register("cloud", builtin.Noop))
	_, ok = reg.Lookup("cloud")
	require.True(t, ok)
	_, ok = reg.Unserved("cloud")
	require.False(t, ok, "a registered handler replaces the mark")
	_, ok = clone.Unserved("cloud")
	require.True(t, ok, "the clone is independent")

	require.ErrorContains(t, reg.MarkUnserved("noop", "x"), "is registered")
	require.ErrorContains(t, reg.MarkUnserved("", "x"), "the name and the reason are required")
	require.ErrorContains(t, reg.MarkUnserved("y", ""), "the name and the reason are required")
}
