package store_test

import (
	"cmp"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// TestConnectWithoutJITBehindSessionPooler: a session-mode PgBouncer
// refuses the jit startup parameter ("unsupported startup parameter"),
// whether wf asks for it or the database URL does (?jit=off, or
// options=-c jit=off). ConnectWithoutJIT connects through it in every case,
// and the pool's sessions still run with the JIT as asked: off unless the
// URL says otherwise.
func TestConnectWithoutJITBehindSessionPooler(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	ctx := context.Background()
	bounced := dbtest.PgBouncerMode(t, dbtest.NewEmptyDatabase(t), "session")
	for _, c := range []struct{ query, jit string }{
		{"", "off"},
		{"jit=off", "off"},
		{"options=-c%20jit%3Doff", "off"},
		{"options=-c%20jit%3Doff%20-c%20work_mem%3D8MB", "off"},
		{"jit=on", "on"},
	} {
		t.Run(cmp.Or(c.query, "none"), func(t *testing.T) {
			url := bounced
			if c.query != "" {
				url += sep(url) + c.query
			}
			pcfg, err := pgxpool.ParseConfig(url)
			require.NoError(t, err)
			pool, err := store.ConnectWithoutJIT(ctx, pcfg)
			require.NoError(t, err)
			defer pool.Close()
			var jit string
			require.NoError(t, pool.QueryRow(ctx, `SHOW jit`).Scan(&jit))
			require.Equal(t, c.jit, jit)
			if strings.Contains(c.query, "work_mem") {
				var mem string
				require.NoError(t, pool.QueryRow(ctx, `SHOW work_mem`).Scan(&mem))
				require.Equal(t, "8MB", mem, "the options' other settings hold too")
			}
		})
	}
}

// sep is what joins a query parameter to url.
func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}
