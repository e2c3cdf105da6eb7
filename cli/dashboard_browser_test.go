package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
)

// browserSpecs are the task types of the dashboard's browser tests, beside
// the shipped ones: a tenant job that succeeds, one that dead-letters on
// its first failure, one that reports records, one capped at one run at a
// time, and a workflow of them.
const browserSpecs = `
kind: TaskType
name: tenant_noop
description: A catalog-scoped job that succeeds.
scope: CATALOG
handler: {builtin: noop}
---
kind: TaskType
name: doomed
description: Fails and is dead-lettered at once (no retries).
scope: CATALOG
handler: {builtin: fail}
max_retries: 0
inputs:
  type: object
  properties:
    message: {type: string}
---
kind: Workflow
name: browser_flow
inputs: {type: object, properties: {fail: {type: boolean}}}
steps:
  prepare: {task_type: tenant_noop}
  each: {task_type: tenant_noop, depends_on: [prepare], for_each: 'map(1..3, #)', concurrency: 2}
  check: {task_type: doomed, depends_on: [each], when: 'inputs.fail ?? false', inputs: {message: '"the run is bad"'}}
---
kind: Workflow
name: browser_approval
steps:
  approve: {approval: {payload: {type: object, required: [ok], properties: {ok: {type: boolean}}}, timeout: 1h}}
  after: {task_type: tenant_noop, depends_on: [approve], when: steps.approve.outputs.ok}
---
kind: TaskType
name: reporting_job
description: Reports 250 records on file descriptor 3, every fourth one rejected.
scope: CATALOG
reporters: [database, gcs_detailed]
handler:
  exec:
    command:
      - sh
      - -c
      - |
        i=1
        while [ $i -le 250 ]; do
          if [ $((i % 4)) -eq 0 ]; then
            printf '{"status":"REJECTED","message":"NAME is required (record %d)","record":{"type":"Feature","id":"r%d","geometry":null,"properties":{"n":%d},"stats":{},"system":{}}}\n' $i $i $i >&3
          else
            printf '{"status":"SUCCESS","message":null,"record":{"type":"Feature","id":"r%d","geometry":null,"properties":{"n":%d},"stats":{},"system":{}}}\n' $i $i >&3
          fi
          i=$((i+1))
        done
---
kind: TaskType
name: capped
description: Sleeps for inputs.duration; one at a time in the cluster.
scope: CATALOG
handler: {builtin: sleep}
concurrency: {global: 1}
inputs: {type: object, properties: {duration: {type: string}}}
`

// chromiumPath finds Debian's chromium (installed by `make test`).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the dashboard's browser tests need Chromium: run `make chromium` (apt-get install chromium) or `make test`, which installs it")
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a tab
// context, and a function that lists the console errors seen so far. extra
// options (chromedp.Env("TZ=…")) come after the defaults.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) (context.Context, func() []string) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// Every console message of level warning or error, uncaught
	// exception and browser log error (network, CSP) is a problem.
	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			switch {
			case m.IsException(), m.Type == "error", m.Type == "warning", m.Type == chromedp.ConsoleType("assert"):
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		// What the page showed and said, to tell why.
		shot, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if png, err := chromedp.Run(shot, chromedp.FullScreenshot(100)); err == nil {
			_ = os.WriteFile(filepath.Join(t.ArtifactDir(), "failure.png"), png, 0o644)
		}
		if html, err := chromedp.Run(shot, chromedp.OuterHTML("html")); err == nil {
			t.Logf("the page at the failure:\n%s", html)
		}
		mu.Lock()
		t.Logf("console: %q", problems)
		mu.Unlock()
	})
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// dashboardEnv is a `wf run` serving the dashboard, with its database.
type dashboardEnv struct {
	t    *testing.T
	base string
	pool *pgxpool.Pool
	// dataDir is the server's data folder (its files root is files/ there).
	dataDir string
	// url and config are its database URL and configuration file.
	url, config string
}

// dashboardOptions adds to a test's `wf run`: specs appended to
// browserSpecs, and lines appended to its configuration.
type dashboardOptions struct {
	specs, config string
}

// startDashboard runs `wf run` in this process on a database of its own
// and waits until it answers.
func startDashboard(t *testing.T, opts ...dashboardOptions) *dashboardEnv {
	t.Helper()
	url := dbtest.NewDatabase(t)
	dir := t.TempDir()
	specs, extra := browserSpecs, ""
	for _, o := range opts {
		specs += "---\n" + o.specs
		extra += o.config
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "browser.yaml"), []byte(specs), 0o644))
	cfg := writeConfig(t, fmt.Sprintf(`specs: [../specs, %s]
poll_interval: 100ms
tokens:
  - {name: ops, role: admin, token: browser-admin-token-1}
  - {name: tenant-a, role: client, catalogs: [cat-a], token: browser-client-a-token-1}
`, filepath.Join(dir, "browser.yaml"))+extra)
	addr := inproc.FreeAddr(t)
	dataDir := t.TempDir()
	errOut := inproc.Start(t, "wf run", func(ctx context.Context, stdout, stderr io.Writer) int {
		return Main(ctx, []string{"wf", "--config", cfg, "--database-url", url, "--data-dir", dataDir, "--log-level", "warn",
			"run", "--listen", addr}, stdout, stderr)
	})
	base := "http://" + addr
	inproc.WaitReady(t, base, errOut)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return &dashboardEnv{t: t, base: base, pool: pool, dataDir: dataDir, url: url, config: cfg}
}

// call sends an API request with the admin token and decodes the answer.
func (e *dashboardEnv) call(method, path string, body any) map[string]any {
	e.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(e.t, err)
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer browser-admin-token-1")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	if res.StatusCode == http.StatusNoContent {
		return nil
	}
	var out map[string]any
	require.NoError(e.t, json.NewDecoder(res.Body).Decode(&out))
	require.Less(e.t, res.StatusCode, 300, "%s %s: %v", method, path, out)
	return out
}

// count runs a count query.
func (e *dashboardEnv) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// waitSettled waits until no task is PENDING or ACTIVE.
func (e *dashboardEnv) waitSettled() {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for e.count(`SELECT count(*) FROM tasks.tasks WHERE status IN ('PENDING', 'ACTIVE')`) > 0 {
		require.True(e.t, time.Now().Before(deadline), "tasks did not finish")
		time.Sleep(50 * time.Millisecond) // wall time: a real server and browser
	}
}

// screenshot saves the page under the test's output folder.
func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(t.ArtifactDir(), name+".png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	return path
}

// textOf reads the text of the element a selector finds.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))))
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return strings.TrimSpace(s)
}

// number parses a count as the page shows it ("1,234" or "" for none).
func number(t *testing.T, s string) int {
	t.Helper()
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	require.NoError(t, err, "not a count: %q", s)
	return n
}

// browserWithin is browser whose context ends after timeout (or with the
// test).
func browserWithin(t *testing.T, timeout time.Duration) (context.Context, func() []string) {
	t.Helper()
	ctx, consoleProblems := browser(t)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	return ctx, consoleProblems
}

// signedInBrowser is browserWithin, signed in to the dashboard at base
// with token.
func signedInBrowser(t *testing.T, timeout time.Duration, base, token string) (context.Context, func() []string) {
	t.Helper()
	ctx, consoleProblems := browserWithin(t, timeout)
	signInBrowser(t, ctx, base, token)
	return ctx, consoleProblems
}

func signInBrowser(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("signin-submit")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="counts"]`)),
	))
}

// TestDashboardInBrowser drives the dashboard of a real `wf run` in headless
// Chromium: sign in, read counts that match the database, filter the task
// list, open a dead letter, requeue it and watch it run again, then sign in
// with a catalog-limited token and see only that tenant; no console error
// on the way.
func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	env := startDashboard(t)
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-a"})
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-b"})
	for range 4 {
		env.call("POST", "/tasks", map[string]any{"task_type": "noop"})
	}
	for range 3 {
		env.call("POST", "/tasks", map[string]any{"task_type": "tenant_noop", "schema_name": "s_cat_a"})
	}
	for range 2 {
		env.call("POST", "/tasks", map[string]any{"task_type": "tenant_noop", "schema_name": "s_cat_b"})
	}
	doomed := env.call("POST", "/tasks", map[string]any{"task_type": "doomed", "schema_name": "s_cat_a",
		"inputs": map[string]any{"message": "the disk is on fire"}})["task_id"].(string)
	env.waitSettled()
	require.Equal(t, 1, env.count(`SELECT count(*) FROM tasks.tasks WHERE status = 'DEAD_LETTER'`))

	ctx, consoleProblems := browserWithin(t, 3*time.Minute)

	// Sign in; the overview's counts match the database.
	signInBrowser(t, ctx, env.base, "browser-admin-token-1")
	require.Equal(t, env.count(`SELECT count(*) FROM tasks.tasks WHERE status = 'COMPLETED'`),
		number(t, textOf(t, ctx, `[data-testid="total-COMPLETED"]`)))
	require.Equal(t, 1, number(t, textOf(t, ctx, `[data-testid="total-DEAD_LETTER"]`)))
	for _, c := range []struct{ typ, schema string }{{"noop", "system"}, {"tenant_noop", "s_cat_a"}, {"tenant_noop", "s_cat_b"}} {
		want := env.count(`SELECT count(*) FROM tasks.tasks WHERE status = 'COMPLETED' AND task_type = $1 AND schema_name = $2`, c.typ, c.schema)
		require.NotZero(t, want)
		got := number(t, textOf(t, ctx, fmt.Sprintf(`[data-testid="count-%s-%s-COMPLETED"]`, c.typ, c.schema)))
		require.Equal(t, want, got, "%s %s", c.typ, c.schema)
	}
	require.Contains(t, textOf(t, ctx, `[data-testid="instances"]`), "leader")
	// The PENDING counts say how fresh their snapshot is.
	require.Regexp(t, `^PENDING counts as of \d+s ago\.$`, textOf(t, ctx, `[data-testid="pending-as-of"]`))
	screenshot(t, ctx, "overview")
	if dst := os.Getenv("WF_DASHBOARD_SCREENSHOT"); dst != "" {
		// make screenshot: docs/dashboard.md's picture of the overview.
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, png, 0o644))
	}

	// Filter the task list to dead letters: exactly the doomed task.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/tasks"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="tasks"]`)),
		chromedp.SetValue(chromedp.ID("f-status"), "DEAD_LETTER"),
		chromedp.Click(chromedp.ID("f-apply")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-task="`+doomed+`"]`)),
	))
	rows, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="tasks"] tbody tr[data-task]`)))
	require.NoError(t, err)
	require.Len(t, rows, 1)
	screenshot(t, ctx, "tasks-dead-letters")

	// Open it: its error shows; requeue it and watch it run again (it
	// fails again, so its second attempt ends as a dead letter too).
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`tr[data-task="`+doomed+`"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="task"][data-status="DEAD_LETTER"]`)),
	))
	require.Contains(t, textOf(t, ctx, "#task-error"), "the disk is on fire")
	require.Contains(t, textOf(t, ctx, `[data-testid="task"] table.kv`), "attempts\t1 (retries 0 of 0)")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("requeue"))))
	deadline := time.Now().Add(60 * time.Second)
	for env.count(`SELECT count(*) FROM tasks.tasks WHERE task_id = $1 AND status = 'DEAD_LETTER' AND attempts = 2`, doomed) != 1 {
		require.True(t, time.Now().Before(deadline), "the requeued task did not run again")
		time.Sleep(50 * time.Millisecond) // wall time: a real server and browser
	}
	require.Eventually(t, func() bool {
		s, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid="task"][data-status="DEAD_LETTER"] table.kv`)))
		return strings.Contains(s, "attempts\t2 (retries 0 of 0)")
	}, 30*time.Second, 100*time.Millisecond, "the page did not show the second attempt")
	// Both attempts are in its history, each with its error.
	attempts, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="attempts"] tbody tr`)))
	require.NoError(t, err)
	require.Len(t, attempts, 2)
	require.Contains(t, textOf(t, ctx, `[data-testid="attempts"]`), "the disk is on fire")
	// The events it emitted: a task.dead_lettered per dead-lettering, each
	// shown with its status now (the outbox deletes consumed events; the
	// task keeps their record), matching the database.
	emitted, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="task-events"] tbody tr[data-event]`)))
	require.NoError(t, err)
	require.Len(t, emitted, 2)
	require.Equal(t, 2, env.count(`SELECT jsonb_array_length(emitted_events) FROM tasks.tasks WHERE task_id = $1`, doomed))
	for _, n := range emitted {
		id := n.AttributeValue("data-event")
		require.Equal(t, 1, env.count(`SELECT count(*) FROM tasks.tasks t, jsonb_array_elements(t.emitted_events) e
WHERE t.task_id = $1 AND e ->> 'event_id' = $2 AND e ->> 'event_type' = 'task.dead_lettered'`, doomed, id))
	}
	require.Contains(t, textOf(t, ctx, `[data-testid="task-events"]`), "task.dead_lettered")
	screenshot(t, ctx, "task-requeued")

	// A catalog-limited token sees its tenant only.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("token"))))
	signInBrowser(t, ctx, env.base, "browser-client-a-token-1")
	cells, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="counts"] td[data-testid]`)))
	require.NoError(t, err)
	require.NotEmpty(t, cells)
	for _, c := range cells {
		id := c.AttributeValue("data-testid")
		require.Contains(t, id, "-s_cat_a-", "a limited token saw another tenant's count: %s", id)
	}
	require.Equal(t, 3, number(t, textOf(t, ctx, `[data-testid="count-tenant_noop-s_cat_a-COMPLETED"]`)))
	screenshot(t, ctx, "overview-limited")

	require.Empty(t, consoleProblems(), "the dashboard logged errors")
}

// TestDashboardAssetsInBrowser walks catalogs → collections → assets in
// headless Chromium: the catalog page lists its collections, its assets a
// page at a time (61 assets: two pages of 50), one collection's assets
// alone, and the deleted ones only when asked; a catalog-limited token
// lists its catalog only. No console error on the way.
func TestDashboardAssetsInBrowser(t *testing.T) {
	t.Parallel()
	env := startDashboard(t)
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-a", "title": "Roads and rivers"})
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-b"})
	env.call("POST", "/catalogs/cat-a/collections", map[string]any{"collection_id": "roads"})
	env.call("POST", "/catalogs/cat-a/collections", map[string]any{"collection_id": "rivers"})
	for i := range 60 {
		col := "roads"
		if i%3 == 0 {
			col = "rivers"
		}
		env.call("POST", "/catalogs/cat-a/assets", map[string]any{"asset_id": fmt.Sprintf("a%03d", i), "collection_id": col,
			"uri": fmt.Sprintf("gs://bucket/a%03d.gpkg", i), "kind": "vector", "metadata": map[string]any{"driver": "GPKG"}})
	}
	env.call("POST", "/catalogs/cat-a/assets", map[string]any{"asset_id": "gone", "collection_id": "roads", "uri": "gs://bucket/gone.tif"})
	env.call("DELETE", "/catalogs/cat-a/assets/gone", nil)

	ctx, consoleProblems := signedInBrowser(t, 3*time.Minute, env.base, "browser-admin-token-1")
	assetRows := func() []string {
		t.Helper()
		nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="assets"] tbody tr[data-asset]`)))
		require.NoError(t, err)
		var ids []string
		for _, n := range nodes {
			ids = append(ids, n.AttributeValue("data-asset"))
		}
		return ids
	}

	// Catalogs → cat-a: its collections and the first page of its assets.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/catalogs"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="catalogs"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="catalogs"] a[href="#/catalog/cat-a"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="assets"] tr[data-asset="a000"]`)),
	))
	require.Contains(t, textOf(t, ctx, "#page h1"), "cat-a")
	cols, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="collections"] tr[data-collection]`)))
	require.NoError(t, err)
	require.Len(t, cols, 2)
	first := assetRows()
	require.Len(t, first, 50)
	require.NotContains(t, first, "gone", "a deleted asset is listed only when asked")
	screenshot(t, ctx, "catalog-assets")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("assets-next")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="assets"] tr[data-asset="a059"]`)),
	))
	require.Len(t, assetRows(), 10)

	// One collection's assets: rivers holds every third.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="collections"] tr[data-collection="rivers"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="collections"] tr.current[data-collection="rivers"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="assets"] tr[data-asset="a003"]`)),
	))
	rivers := assetRows()
	require.Len(t, rivers, 20)
	for _, id := range rivers {
		n, err := strconv.Atoi(strings.TrimPrefix(id, "a"))
		require.NoError(t, err)
		require.Zero(t, n%3, "asset %s is not in rivers", id)
	}
	require.Contains(t, textOf(t, ctx, `[data-testid="assets"] tr[data-asset="a003"]`), "gs://bucket/a003.gpkg")

	// With the deleted ones: roads shows "gone".
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/catalog/cat-a?collection_id=roads&all=1"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="assets"] tr[data-asset="gone"]`)),
	))
	require.Contains(t, textOf(t, ctx, `[data-testid="assets"] tr[data-asset="gone"]`), "deleted")

	// A catalog-limited token lists its catalog only.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("token"))))
	signInBrowser(t, ctx, env.base, "browser-client-a-token-1")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/catalogs"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="catalogs"] a[href="#/catalog/cat-a"]`)),
	))
	require.NotContains(t, textOf(t, ctx, `[data-testid="catalogs"]`), "cat-b")

	require.Empty(t, consoleProblems(), "the dashboard logged errors")
}

// TestDashboardReportInBrowser opens the page of a task that reported 250
// records (every fourth rejected) in headless Chromium: the records the
// database reporter kept show ten at a time, matching the database, page
// through, filter by outcome, and the detailed report's URL is the one the
// task's outputs give. No console error on the way.
func TestDashboardReportInBrowser(t *testing.T) {
	t.Parallel()
	env := startDashboard(t)
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-a"})
	id := env.call("POST", "/tasks", map[string]any{"task_type": "reporting_job", "schema_name": "s_cat_a"})["task_id"].(string)
	env.waitSettled()
	require.Equal(t, 1, env.count(`SELECT count(*) FROM tasks.tasks WHERE task_id = $1 AND status = 'COMPLETED'`, id))
	// Kept: the first 100 successes (of 188) and every refusal (62).
	require.Equal(t, 162, env.count(`SELECT jsonb_array_length(kept_records) FROM tasks.tasks WHERE task_id = $1`, id))
	kept := func(outcome string, after, limit int) []string {
		return dbtest.Strings(t, context.Background(), env.pool, `SELECT e ->> 'n' FROM tasks.tasks t, jsonb_array_elements(t.kept_records) e
WHERE t.task_id = $1 AND ($2 = '' OR e ->> 'status' = $2) AND (e ->> 'n')::int > $3 ORDER BY (e ->> 'n')::int LIMIT $4`, id, outcome, after, limit)
	}
	ctx, consoleProblems := browserWithin(t, 3*time.Minute)
	rowsShown := func(outcome string) []string {
		nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="records"] tbody tr[data-record]`)))
		require.NoError(t, err)
		var out []string
		for _, n := range nodes {
			out = append(out, n.AttributeValue("data-record"))
			if outcome != "" {
				require.Equal(t, outcome, n.AttributeValue("data-outcome"))
			}
		}
		return out
	}

	signInBrowser(t, ctx, env.base, "browser-admin-token-1")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/task/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="records"] tbody tr[data-record="1"]`)),
	))
	require.Equal(t, kept("", 0, 10), rowsShown(""))
	require.Contains(t, textOf(t, ctx, `[data-testid="task-report"]`), "250 records: 188 succeeded, 62 rejected, 0 failed.")
	var reportURL string
	require.NoError(t, env.pool.QueryRow(context.Background(), `SELECT outputs ->> 'report_url' FROM tasks.tasks WHERE task_id = $1`, id).Scan(&reportURL))
	require.NotEmpty(t, reportURL)
	require.Contains(t, textOf(t, ctx, `[data-testid="task-report"]`), reportURL, "where the report is, shown")
	// The download link goes through the API with the session: the report
	// as it was written.
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
  const a = document.querySelector('[data-testid="report-url"]');
  const r = await fetch(a.href);
  return a.getAttribute("href") + " " + r.status + " " + (await r.text()).split("\n").filter(Boolean).length;
})()`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, "/tasks/"+id+"/files/report 200 250", got, "every record of the report, downloaded")
	screenshot(t, ctx, "task-report")

	// The next page, then refusals only, a page at a time.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("records-next")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="records"] tbody tr[data-record="11"]`))))
	require.Equal(t, kept("", 10, 10), rowsShown(""))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[any](`(() => { const s = document.getElementById("r-outcome"); s.value = "REJECTED"; s.dispatchEvent(new Event("change")); })()`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="records"] tbody tr[data-record="4"][data-outcome="REJECTED"]`))))
	require.Equal(t, kept("REJECTED", 0, 10), rowsShown("REJECTED"))
	require.Contains(t, textOf(t, ctx, `tr[data-record="4"]`), "NAME is required (record 4)")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("records-next")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="records"] tbody tr[data-record="44"]`))))
	require.Equal(t, kept("REJECTED", 40, 10), rowsShown("REJECTED"))
	screenshot(t, ctx, "task-report-rejected")

	require.Empty(t, consoleProblems(), "the dashboard logged errors")
}

// TestDashboardWaitingInBrowser: PENDING tasks held for each kind of
// reason show it in headless Chromium: one behind a running task of a type
// capped at one (concurrency_global), one of a paused tenant, one not due
// for an hour; the task list and each task's page say why, matching the
// API, and the overview counts them by reason. No console error.
func TestDashboardWaitingInBrowser(t *testing.T) {
	t.Parallel()
	env := startDashboard(t)
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-a"})
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-b"})
	running := env.call("POST", "/tasks", map[string]any{"task_type": "capped", "schema_name": "s_cat_a", "inputs": map[string]any{"duration": "10m"}})["task_id"].(string)
	deadline := time.Now().Add(60 * time.Second)
	for env.count(`SELECT count(*) FROM tasks.tasks WHERE task_id = $1 AND status = 'ACTIVE'`, running) != 1 {
		require.True(t, time.Now().Before(deadline), "the capped task did not start")
		time.Sleep(50 * time.Millisecond) // wall time: a real server and browser
	}
	t.Cleanup(func() { env.call("POST", "/tasks/"+running+"/cancel", nil) })
	capped := env.call("POST", "/tasks", map[string]any{"task_type": "capped", "schema_name": "s_cat_a", "inputs": map[string]any{"duration": "1ms"}})["task_id"].(string)
	env.call("POST", "/admin/pauses", map[string]any{"kind": "tenant", "name": "s_cat_b", "reason": "maintenance"})
	paused := env.call("POST", "/tasks", map[string]any{"task_type": "tenant_noop", "schema_name": "s_cat_b"})["task_id"].(string)
	later := env.call("POST", "/tasks", map[string]any{"task_type": "tenant_noop", "schema_name": "s_cat_a", "run_in": "1h"})["task_id"].(string)
	want := map[string]string{capped: "concurrency_global", paused: "paused", later: "not_due"}
	for id, reason := range want {
		require.Equal(t, reason, env.call("GET", "/tasks/"+id, nil)["waiting_reason"], id)
	}
	require.Nil(t, env.call("GET", "/tasks/"+running, nil)["waiting_reason"], "an ACTIVE task waits for nothing")

	ctx, consoleProblems := signedInBrowser(t, 3*time.Minute, env.base, "browser-admin-token-1")
	// The overview counts them by reason (its PENDING counts come from a
	// snapshot a few seconds old: the page refreshes until they show).
	require.Eventually(t, func() bool {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`body`)))
		return err == nil && strings.Contains(s, "Waiting PENDING tasks, by reason")
	}, 60*time.Second, 200*time.Millisecond, "the overview shows no held tasks")
	for cell, n := range map[string]int{
		"held-concurrency_global-capped-s_cat_a": 1, "held-paused-tenant_noop-s_cat_b": 1, "held-not_due-tenant_noop-s_cat_a": 1,
	} {
		require.Equal(t, n, number(t, textOf(t, ctx, `[data-testid="`+cell+`"]`)), cell)
	}
	screenshot(t, ctx, "overview-held")

	// The task list says why each PENDING task waits.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/tasks?status=PENDING"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-task="`+later+`"]`))))
	for id, reason := range want {
		node := `tr[data-task="` + id + `"] [data-waiting]`
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(node))))
		nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS(node)))
		require.NoError(t, err)
		require.Equal(t, reason, nodes[0].AttributeValue("data-waiting"), id)
	}
	screenshot(t, ctx, "tasks-waiting")

	// A task's page says it too.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/task/"+capped),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="task"] [data-waiting="concurrency_global"]`))))
	require.Contains(t, textOf(t, ctx, `[data-testid="task"] table.kv`), "held by concurrency.global")

	require.Empty(t, consoleProblems(), "the dashboard logged errors")
}

// TestDashboardMapInBrowser: a collection's page in the dashboard draws its
// features on an OpenLayers map in headless Chromium, for a token limited
// to its catalog, with nothing logged to the console.
func TestDashboardMapInBrowser(t *testing.T) {
	t.Parallel()
	env := startDashboard(t)
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-a"})
	env.call("POST", "/catalogs/cat-a/collections", map[string]any{"collection_id": "places"})
	dir := filepath.Join(env.dataDir, "files", "s_cat_a")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "places.geojson"), []byte(`{"type":"FeatureCollection","features":[
{"type":"Feature","geometry":{"type":"Point","coordinates":[7.68,45.07]},"properties":{"code":"TO"}},
{"type":"Feature","geometry":{"type":"Point","coordinates":[9.19,45.46]},"properties":{"code":"MI"}},
{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[8,44],[9,44],[9,45],[8,44]]]},"properties":{"code":"SQ"}}]}`), 0o644))
	env.call("POST", "/ingestion/cat-a/places", map[string]any{"source": "places.geojson", "format": "geojson", "id_attribute": "code", "asset_id": "PLACES"})
	env.waitSettled()
	require.Equal(t, 3, env.count(`SELECT count(*) FROM s_cat_a.places`))

	ctx, consoleProblems := signedInBrowser(t, 3*time.Minute, env.base, "browser-client-a-token-1")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(env.base+"/ui/#/catalog/cat-a?collection_id=places"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="map"][data-features="3"][data-rendered="1"] canvas`)),
	))
	screenshot(t, ctx, "collection-map")
	require.Empty(t, consoleProblems(), "the dashboard logged errors")
}
