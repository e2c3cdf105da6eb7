package cli

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestDashboardSignalInBrowser: a run's page shows its approval step
// waiting for its signal and until when, and to an admin (the dashboard's
// actions take an admin session) a payload box and a button; a payload the step's schema
// refuses is reported and changes nothing; the button sends the signal
// with the payload typed in, and the run goes on to its end.
func TestDashboardSignalInBrowser(t *testing.T) {
	t.Parallel()
	env := startDashboard(t)
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-a"})
	id := env.call("POST", "/workflows/browser_approval/runs", map[string]any{"schema_name": "s_cat_a"})["run_id"].(string)

	ctx, consoleProblems := signedInBrowser(t, 4*time.Minute, env.base, "browser-admin-token-1")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/run/"+id),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-step="approve"][data-status="RUNNING"]`)),
		chromedp.WaitVisible(chromedp.ID("run-signal-approve")),
	))
	require.Contains(t, textOf(t, ctx, `tr[data-step="approve"] td.progress`), "waits for signal approve until")
	screenshot(t, ctx, "run-waits-for-signal")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("signal-payload-approve"), `{"ok": "yes"}`),
		chromedp.Click(chromedp.ID("run-signal-approve")),
		chromedp.WaitVisible(chromedp.CSS(`#status.error`)),
	))
	require.Equal(t, "RUNNING", env.call("GET", "/workflows/runs/"+id, nil)["steps"].([]any)[0].(map[string]any)["status"])
	require.Contains(t, textOf(t, ctx, "#status"), "signal approve failed")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("signal-payload-approve"), `{"ok": true}`),
		chromedp.Click(chromedp.ID("run-signal-approve")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-step="approve"][data-status="COMPLETED"]`)),
	))
	env.waitRun(id, "COMPLETED")
	for _, p := range consoleProblems() {
		require.Contains(t, p, "400", "the dashboard logged errors other than the refused signal")
	}
}
