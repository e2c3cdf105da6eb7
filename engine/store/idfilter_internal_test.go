package store

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIDFilter: every id added is held; of a million ids never added,
// few seem held once a million are in (the lookups a load still makes).
func TestIDFilter(t *testing.T) {
	t.Parallel()
	f := newIDFilter()
	const n = 1_000_000
	for i := range n {
		f.add("in-" + strconv.Itoa(i))
	}
	for i := range n {
		require.True(t, f.mayHold("in-"+strconv.Itoa(i)), "id %d", i)
	}
	held := 0
	for i := range n {
		if f.mayHold("out-" + strconv.Itoa(i)) {
			held++
		}
	}
	require.Less(t, held, n/20, "%d of %d ids never added seem held", held, n)
}
