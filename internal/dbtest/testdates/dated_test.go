package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFindDatedTests: in a small module (testdata/datedmod), the tests that
// reach a root are selected, through a helper, another package, a switch
// and a closure, and those that do not are left: a live write, a method of
// another type that shares a name (t.Run beside store.Run), a dated
// function reached only through a command table.
func TestFindDatedTests(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sel, err := findDatedTests(ctx, "testdata/datedmod", []string{"./..."})
	require.NoError(t, err)
	got := map[string][]string{}
	for _, s := range sel {
		got[s.importPath] = s.tests
	}
	require.Equal(t, map[string][]string{
		// app's table is not followed; its own SQL and partitions are.
		"example.com/datedmod/app":  {"TestEnsures", "TestRawSQL"},
		"example.com/datedmod/seed": {"TestBackdated", "TestFill", "TestMode"},
	}, got)
	require.Equal(t, "^(TestBackdated|TestFill|TestMode)$", sel[1].runPattern())
}
