package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestShortIDAsDashboardShowsIt: the dashboard shows an id as a prefix
// followed by "…" (api/ui/static/format.js, shortIDs); pasted as shown,
// with the "…" or "...", wf workflows show takes it, and the full id is
// still the one found.
func TestShortIDAsDashboardShowsIt(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"flow.yaml": twoStepFlow})
	id := e.runID("run_id", "workflows", "start", "--format", "json", "two").String()
	for _, shown := range []string{id[:13] + "…", id[:8] + "...", id[:23] + "…"} {
		code, out, errOut := e.run("workflows", "show", "--format", "json", shown)
		require.Equal(t, ExitOK, code, "%s: %s", shown, errOut)
		require.Contains(t, out, id, shown)
	}
	// The ellipsis alone, or in the middle, is no prefix.
	for _, bad := range []string{"…", id[:8] + "…" + id[len(id)-4:]} {
		code, _, errOut := e.run("workflows", "show", bad)
		require.Equal(t, ExitUsage, code, "%s: %s", bad, errOut)
		require.Contains(t, errOut, "is neither a run id")
	}
}

// TestEventAndSubscriberPrefixes: wf events requeue and wf webhooks remove
// take a unique prefix of an id too (with the dashboard's "…" or not); an
// unknown prefix is a clear failure, a malformed one a usage error.
func TestEventAndSubscriberPrefixes(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"flow.yaml": twoStepFlow})
	pool, err := pgxpool.New(t.Context(), e.url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	// A dead-lettered event, requeued by the prefix the dashboard shows.
	event := e.runID("event_id", "events", "emit", "--format", "json", "shortid.test").String()
	require.NotEqual(t, uuid.Nil.String(), event)
	_, err = pool.Exec(t.Context(), `UPDATE tasks.events SET status = 'DEAD_LETTER', dead_lettered_at = now(), error = 'boom' WHERE event_id = $1`, event)
	require.NoError(t, err)
	code, out, errOut := e.run("events", "requeue", event[:13]+"…")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "requeued event "+event)
	var status string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT status FROM tasks.events WHERE event_id = $1`, event).Scan(&status))
	require.Equal(t, "PENDING", status)

	// A subscriber, removed by a prefix.
	secretFile := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("very-secret-signing-key-0123456789\n"), 0o600))
	sub := e.runID("subscriber_id", "webhooks", "add", "--format", "json", "--url", "http://127.0.0.1:9/hook", "--event", "catalog.*", "--secret-file", secretFile).String()
	code, out, errOut = e.run("webhooks", "remove", sub[:8])
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "removed webhook subscriber "+sub)
	var left int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM tasks.webhook_subscribers`).Scan(&left))
	require.Zero(t, left)

	// Unknown and malformed.
	code, _, errOut = e.run("webhooks", "remove", "ffffffff-ff")
	require.Equal(t, ExitFailure, code, errOut)
	require.Contains(t, errOut, `no subscriber id starts with "ffffffff-ff"`)
	code, _, errOut = e.run("events", "requeue", "ffffffff…")
	require.Equal(t, ExitFailure, code, errOut)
	require.Contains(t, errOut, `no event id starts with "ffffffff…"`)
	code, _, errOut = e.run("events", "requeue", "xyz")
	require.Equal(t, ExitUsage, code, errOut)
	require.Contains(t, errOut, `"xyz" is neither an event id (a UUIDv7) nor a prefix of one`)
}
