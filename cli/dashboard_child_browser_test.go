package cli

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestDashboardChildRunInBrowser: a parent run's page links its child run
// from the step that started it, and the child's page links back to its
// parent (headless Chromium).
func TestDashboardChildRunInBrowser(t *testing.T) {
	t.Parallel()
	env := startDashboard(t, dashboardOptions{specs: `kind: Workflow
name: browser_parent
steps:
  call: {workflow: browser_flow, inputs: {fail: 'false'}}
`})
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-a"})
	parent := env.call("POST", "/workflows/browser_parent/runs", map[string]any{"schema_name": "s_cat_a"})["run_id"].(string)
	env.waitRun(parent, "COMPLETED")
	call := env.call("GET", "/workflows/runs/"+parent, nil)["steps"].([]any)[0].(map[string]any)
	child := call["runs"].([]any)[0].(map[string]any)["run_id"].(string)

	ctx, consoleProblems := signedInBrowser(t, 3*time.Minute, env.base, "browser-admin-token-1")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/run/"+parent),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-step="call"] a[data-run="`+child+`"]`)),
	))
	kind, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-step="call"] td:nth-child(3)`)))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`tr[data-step="call"] a[data-run="`+child+`"]`)),
		chromedp.WaitVisible(chromedp.ID("run-parent")),
		chromedp.Click(chromedp.ID("run-parent")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-step="call"] a[data-run="`+child+`"]`)),
	))
	require.Equal(t, "workflow browser_flow", kind)
	require.Empty(t, consoleProblems(), "the dashboard logged errors")
}
