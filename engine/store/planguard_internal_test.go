package store

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestPlanGuardPaces: a connection drops its plans at most once per
// planDiscardEvery, each connection on its own; an unknown one always may.
func TestPlanGuardPaces(t *testing.T) {
	t.Parallel()
	g := &planGuard{last: map[*pgx.Conn]time.Time{}}
	a, b := &pgx.Conn{}, &pgx.Conn{}
	t0 := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)

	require.True(t, g.allow(a, t0))
	require.False(t, g.allow(a, t0.Add(time.Second)), "a slow statement right after a re-plan keeps the new plan")
	require.False(t, g.allow(a, t0.Add(planDiscardEvery-time.Nanosecond)))
	require.True(t, g.allow(b, t0.Add(time.Second)), "another connection has plans of its own")
	require.True(t, g.allow(a, t0.Add(planDiscardEvery)))
	require.True(t, g.allow(nil, t0))
	require.True(t, g.allow(nil, t0))

	// Connections long quiet are forgotten, so closed ones do not pile up.
	require.True(t, g.allow(a, t0.Add(10*planGuardForgetAt)))
	require.Len(t, g.last, 1)
}
