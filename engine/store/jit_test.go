package store_test

import (
	"cmp"
	"context"
	"strings"
	"testing"
	"time"

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
// URL says otherwise. So do the connections made from the pool's settings
// (pool.Config().ConnConfig: the leader's, presence's, createMonth's):
// before, the SETs were the pool's AfterConnect alone, and such a
// connection ran with jit=on and the default work_mem. And so does one
// connection made with store.ConnectConfig on the URL (the CLI's
// connectSetting: catalog.database_url's schema check and migrations).
func TestConnectWithoutJITBehindSessionPooler(t *testing.T) {
	ctx := bouncerTest(t)
	// Session mode: one server session per client (the pool, its settings', one).
	bounced := dbtest.PgBouncerSized(t, dbtest.NewEmptyDatabase(t), "session", 6)
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
			own, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
			require.NoError(t, err, "a connection from the pool's settings")
			defer own.Close(ctx) //nolint:errcheck
			cc, err := pgx.ParseConfig(url)
			require.NoError(t, err)
			one, err := store.ConnectConfig(ctx, cc)
			require.NoError(t, err, "one connection on the URL")
			defer one.Close(ctx) //nolint:errcheck
			for name, q := range map[string]querier{"pool": pool, "pool's settings": own, "ConnectConfig": one} {
				jit, mem := jitAndWorkMem(ctx, t, q)
				// ConnectConfig adds no jit=off of its own: it connects as the URL says.
				if name != "ConnectConfig" || c.query != "" {
					require.Equal(t, c.jit, jit, name)
				}
				if strings.Contains(c.query, "work_mem") {
					require.Equal(t, "8MB", mem, "%s: the options' other settings hold too", name)
				}
			}
		})
	}
}

// TestConnectConfigKeepsItsSettings: store.ConnectConfig moves a refused
// startup parameter onto the connection's own settings, so the settings it
// returns (conn.Config()) connect again, with the setting, through the
// pooler; and it leaves the settings it was given as they were.
func TestConnectConfigKeepsItsSettings(t *testing.T) {
	ctx := bouncerTest(t)
	url := dbtest.NewEmptyDatabase(t)
	bounced := dbtest.PgBouncerSized(t, url, "session", 4)
	cc, err := pgx.ParseConfig(bounced + sep(bounced) + "options=-c%20work_mem%3D8MB&jit=off")
	require.NoError(t, err)
	conn, err := store.ConnectConfig(ctx, cc)
	require.NoError(t, err)
	defer conn.Close(ctx) //nolint:errcheck
	require.Contains(t, cc.RuntimeParams, "jit", "the caller's settings are not changed")
	require.Nil(t, cc.AfterConnect)
	again, err := pgx.ConnectConfig(ctx, conn.Config())
	require.NoError(t, err)
	defer again.Close(ctx) //nolint:errcheck
	jit, mem := jitAndWorkMem(ctx, t, again)
	require.Equal(t, []string{"off", "8MB"}, []string{jit, mem})

	// Straight to PostgreSQL nothing is moved.
	direct, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	direct.RuntimeParams["jit"] = "off"
	conn2, err := store.ConnectConfig(ctx, direct)
	require.NoError(t, err)
	defer conn2.Close(ctx) //nolint:errcheck
	require.Nil(t, conn2.Config().AfterConnect)
	require.Equal(t, "off", conn2.Config().RuntimeParams["jit"])
}

// querier is what runs a query: a pool or a connection.
type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// bouncerTest starts a test through PgBouncer (skipped with -short, it
// starts processes; parallel) and returns its context, bounded to 2
// minutes.
func bouncerTest(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	// A bounded wait: a client past the bouncer's server sessions waits for one.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// jitAndWorkMem reads the session's jit and work_mem on q.
func jitAndWorkMem(ctx context.Context, t *testing.T, q querier) (jit, mem string) {
	t.Helper()
	require.NoError(t, q.QueryRow(ctx, `SELECT current_setting('jit'), current_setting('work_mem')`).Scan(&jit, &mem))
	return jit, mem
}

// sep is what joins a query parameter to url.
func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}
