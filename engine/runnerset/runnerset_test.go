package runnerset_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/spec"
)

// TestRuleLeaseDefault: a task type without visibility_timeout gets the
// engine's configured default; one that sets it keeps its own.
func TestRuleLeaseDefault(t *testing.T) {
	t.Parallel()
	src := `
kind: TaskType
name: plain
handler: {builtin: noop}
---
kind: TaskType
name: own_lease
handler: {builtin: noop}
visibility_timeout: 90s
`
	set, err := spec.Compile([]spec.Source{{Name: "t.yaml", Data: []byte(src)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	plain, ok := set.TaskType("plain")
	require.True(t, ok)
	own, ok := set.TaskType("own_lease")
	require.True(t, ok)

	require.Equal(t, 42*time.Second, runnerset.RuleFor(plain, 42*time.Second).Lease)
	require.Equal(t, 90*time.Second, runnerset.RuleFor(own, 42*time.Second).Lease)
}
