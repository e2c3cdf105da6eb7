package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestDisableJIT: connections made with DisableJIT run with jit off, and a
// configuration that sets jit already keeps its value.
func TestDisableJIT(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := dbtest.NewPool(t).Config().ConnConfig
	show := func(cc *pgx.ConnConfig) string {
		conn, err := pgx.ConnectConfig(ctx, cc)
		require.NoError(t, err)
		defer conn.Close(ctx) //nolint:errcheck
		var jit string
		require.NoError(t, conn.QueryRow(ctx, `SHOW jit`).Scan(&jit))
		return jit
	}
	cc := base.Copy()
	store.DisableJIT(cc)
	require.Equal(t, "off", show(cc))
	kept := base.Copy()
	kept.RuntimeParams["jit"] = "on"
	store.DisableJIT(kept)
	require.Equal(t, "on", show(kept))
}
