package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// runRows lists the run ids the runs page shows, in order.
func runRows(t *testing.T, ctx context.Context) []string {
	t.Helper()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="runs"] tbody tr[data-run]`), chromedp.AtLeast(0)))
	require.NoError(t, err)
	var ids []string
	for _, n := range nodes {
		ids = append(ids, n.AttributeValue("data-run"))
	}
	return ids
}

// waitRun waits until the API says the run has status.
func (e *dashboardEnv) waitRun(id, status string) {
	e.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for e.call("GET", "/workflows/runs/"+id, nil)["status"] != status {
		require.True(e.t, time.Now().Before(deadline), "run %s never became %s", id, status)
		time.Sleep(50 * time.Millisecond) // wall time: a real server and browser
	}
}

// TestDashboardRunsInBrowser drives the dashboard's workflow pages in
// headless Chromium: the runs list with its filters (status, workflow,
// tenant) and keyset pages; a failed run's page with its steps in order, a
// fan-out's item counts and its tasks linked to the task page; Retry and
// Cancel for an admin; and a catalog-limited token that sees only its
// tenant's runs and no buttons.
func TestDashboardRunsInBrowser(t *testing.T) {
	t.Parallel()
	env := startDashboard(t)
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-a"})
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-b"})
	start := func(schema string, fail bool) string {
		return env.call("POST", "/workflows/browser_flow/runs", map[string]any{"schema_name": schema, "inputs": map[string]any{"fail": fail}})["run_id"].(string)
	}
	good := start("s_cat_a", false)
	bad := start("s_cat_a", true)
	other := start("s_cat_b", false)
	env.waitRun(good, "COMPLETED")
	env.waitRun(bad, "FAILED")
	env.waitRun(other, "COMPLETED")
	env.waitSettled()

	ctx, consoleProblems := signedInBrowser(t, 4*time.Minute, env.base, "browser-admin-token-1")

	// Every run, newest first; two to a page: the second page holds the oldest.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#nav a[data-page="workflows"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="runs"] tr[data-run="`+other+`"]`)),
	))
	require.Equal(t, []string{other, bad, good}, runRows(t, ctx))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/workflows?limit=2"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="runs"] tr[data-run="`+bad+`"]`)),
	))
	require.Equal(t, []string{other, bad}, runRows(t, ctx))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("runs-next")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="runs"] tr[data-run="`+good+`"]`)),
	))
	require.Equal(t, []string{good}, runRows(t, ctx))

	// Filters: FAILED, then the other tenant.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/workflows"),
		chromedp.WaitVisible(chromedp.ID("rf-status")),
		chromedp.SetValue(chromedp.ID("rf-status"), "FAILED"),
		chromedp.Click(chromedp.ID("rf-apply")),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="runs"] tr[data-run="`+good+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="runs"] tr[data-run="`+bad+`"]`)),
	))
	require.Equal(t, []string{bad}, runRows(t, ctx))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/workflows?schema_name=s_cat_b&workflow=browser_flow"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="runs"] tr[data-run="`+other+`"]`)),
	))
	require.Equal(t, []string{other}, runRows(t, ctx))

	// The failed run: its steps in order, the fan-out's counts, the failed
	// step's error; a task link opens the task page.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/workflows?status=FAILED"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="runs"] tr[data-run="`+bad+`"] a`)),
		chromedp.Click(chromedp.CSS(`[data-testid="runs"] tr[data-run="`+bad+`"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"][data-status="FAILED"]`)),
	))
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="steps"] tbody tr[data-step]`)))
	require.NoError(t, err)
	var order, statuses []string
	for _, n := range nodes {
		order = append(order, n.AttributeValue("data-step"))
		statuses = append(statuses, n.AttributeValue("data-status"))
	}
	require.Equal(t, []string{"prepare", "each", "check"}, order)
	require.Equal(t, []string{"COMPLETED", "COMPLETED", "FAILED"}, statuses)
	require.Contains(t, textOf(t, ctx, `tr[data-step="each"] td.progress`), "3 of 3 items done")
	require.Equal(t, "3 COMPLETED", textOf(t, ctx, `[data-testid="counts-each"]`))
	require.Contains(t, textOf(t, ctx, `tr[data-step="check"] td.error`), "step check failed")
	require.Contains(t, textOf(t, ctx, "#run-error"), "the run is bad")
	links, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`tr[data-step="each"] a.step-task`)))
	require.NoError(t, err)
	require.Len(t, links, 3)
	screenshot(t, ctx, "run-failed")
	checkTask := env.count(`SELECT count(*) FROM tasks.tasks WHERE workflow_run_id = $1 AND workflow_step = 'check'`, bad)
	require.Equal(t, 1, checkTask)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`tr[data-step="check"] a.step-task`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="task"][data-status="DEAD_LETTER"]`)),
	))
	require.Contains(t, textOf(t, ctx, "#task-error"), "the run is bad")

	// Retry (admin): a second attempt, which fails the same way.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/run/"+bad),
		chromedp.WaitVisible(chromedp.ID("run-retry")),
		chromedp.Click(chromedp.ID("run-retry")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"][data-attempt="2"]`)),
	))
	env.waitRun(bad, "FAILED")
	require.Equal(t, 2, env.count(`SELECT count(*) FROM tasks.tasks WHERE workflow_run_id = $1 AND workflow_step = 'check'`, bad))

	// Cancel (admin): a run held by a paused task type.
	env.call("POST", "/admin/pauses", map[string]any{"kind": "task_type", "name": "tenant_noop", "reason": "browser test"})
	held := start("s_cat_a", false)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/run/"+held),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"][data-status="RUNNING"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-step="prepare"][data-status="RUNNING"]`)),
		chromedp.Click(chromedp.ID("run-cancel")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"][data-status="CANCELLED"]`)),
	))
	require.Equal(t, "CANCELLED", env.call("GET", "/workflows/runs/"+held, nil)["status"])
	env.call("DELETE", "/admin/pauses/task_type/tenant_noop", nil)
	require.Empty(t, consoleProblems(), "the dashboard logged errors")

	// A token limited to cat-a: its tenant's runs only, no buttons.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("token"))))
	signInBrowser(t, ctx, env.base, "browser-client-a-token-1")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/workflows"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="runs"] tr[data-run="`+good+`"]`)),
	))
	require.ElementsMatch(t, []string{good, bad, held}, runRows(t, ctx))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/workflows?schema_name=s_cat_b"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="runs"] td.muted`)),
	))
	require.Empty(t, runRows(t, ctx))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/run/"+bad),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"][data-status="FAILED"]`)),
	))
	buttons, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`#run-actions button`), chromedp.AtLeast(0)))
	require.NoError(t, err)
	require.Empty(t, buttons, "a client gets no retry or cancel button")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/run/"+other),
		chromedp.WaitVisible(chromedp.CSS(`#page p.error`)),
	))
	require.Contains(t, textOf(t, ctx, `#page p.error`), fmt.Sprintf("no workflow run %s", other))
}
