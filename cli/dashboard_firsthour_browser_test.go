package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// viewerZone is the time zone the browser of TestDashboardFirstHour runs
// in: neither UTC nor the zone of the schedule it reads.
const viewerZone = "America/New_York"

// evalBool evaluates a JavaScript expression that yields a boolean.
func evalBool(t *testing.T, ctx context.Context, expr string) bool {
	t.Helper()
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	require.NoError(t, err)
	return ok
}

// evalString evaluates a JavaScript expression that yields a string.
func evalString(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	require.NoError(t, err)
	return s
}

// plainSpaces turns the no-break spaces of formatted times into spaces.
func plainSpaces(s string) string {
	return strings.NewReplacer("\u202f", " ", "\u00a0", " ").Replace(s)
}

// TestDashboardFirstHour checks in headless Chromium what a new user met in
// their first hour (issue #36): a signed-out page shows the sign-in form
// and no navigation; the navigation fits a 375 px wide screen; times carry
// their zone (a 02:00 Europe/Rome schedule shows 2:00 in Rome's zone, other
// times the viewer's zone, labelled); the dead letters page shows no stray
// "null"; webhook subscribers added in the same minute show different
// short ids, each a prefix of its id; and a long delivery error keeps its
// cause in view, whole in its title. No console error on the way.
func TestDashboardFirstHour(t *testing.T) {
	t.Parallel()
	// A receiver that refuses every delivery with a long explanation, its
	// useful part at its end.
	refusal := "the receiver could not read the delivery: " + strings.Repeat("details of the parser state; ", 14) +
		"CAUSE: the signing secret was rotated"
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, refusal, http.StatusBadRequest)
	}))
	t.Cleanup(receiver.Close)
	env := startDashboard(t, dashboardOptions{config: "outbound: {allow: [127.0.0.0/8]}\n"})

	// Three subscribers added one after another: UUIDv7 ids whose first 8
	// hex digits (their creation time, in units of about a minute) are
	// shared by two of them at least.
	secretFile := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("very-secret-signing-key-0123456789\n"), 0o600))
	for range 3 {
		code, _, errOut := runWF(t, "--config", env.config, "--database-url", env.url, "webhooks", "add",
			"--url", receiver.URL+"/hook", "--event", "catalog.*", "--secret-file", secretFile)
		require.Equal(t, ExitOK, code, errOut)
	}
	require.GreaterOrEqual(t, env.count(`SELECT max(n) FROM (SELECT count(*) AS n FROM tasks.webhook_subscribers
GROUP BY left(subscriber_id::text, 8)) p`), 2, "test precondition: two subscribers share their first 8 hex digits")
	// A catalog.created event: one delivery per subscriber, each refused.
	env.call("POST", "/catalogs", map[string]any{"catalog_id": "cat-a"})
	deadline := time.Now().Add(2 * time.Minute)
	for env.count(`SELECT count(*) FROM tasks.tasks WHERE task_type = 'webhook_delivery' AND status = 'FAILED'`) < 3 {
		require.True(t, time.Now().Before(deadline), "the deliveries did not fail")
		time.Sleep(50 * time.Millisecond) // wall time: a real server and browser
	}
	// A dead letter, for the dead letters page.
	env.call("POST", "/tasks", map[string]any{"task_type": "doomed", "schema_name": "s_cat_a", "inputs": map[string]any{"message": "the disk is on fire"}})
	for env.count(`SELECT count(*) FROM tasks.tasks WHERE status = 'DEAD_LETTER'`) < 1 {
		require.True(t, time.Now().Before(deadline), "the doomed task was not dead-lettered")
		time.Sleep(50 * time.Millisecond) // wall time: a real server and browser
	}

	// Chromium in the viewer's zone, in US English (the format expected).
	ctx, consoleProblems := browser(t, chromedp.Env("TZ="+viewerZone, "LANG=en_US.UTF-8", "LANGUAGE=en_US"), chromedp.Flag("lang", "en-US"))
	var cancel context.CancelFunc
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	require.Equal(t, viewerZone, evalString(t, ctx, `Intl.DateTimeFormat().resolvedOptions().timeZone`), "test precondition: the browser's zone")

	// Signed out: the sign-in form and nothing else of the dashboard.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(env.base+"/ui/"), chromedp.WaitVisible(chromedp.ID("token"))))
	require.True(t, evalBool(t, ctx, `getComputedStyle(document.getElementById("nav")).display === "none"
		&& document.getElementById("nav").getBoundingClientRect().width === 0
		&& getComputedStyle(document.getElementById("signout")).display === "none"`), "a signed-out page shows the navigation")
	screenshot(t, ctx, "signed-out")

	// Signed in: the navigation shows.
	signInBrowser(t, ctx, env.base, "browser-admin-token-1")
	require.True(t, evalBool(t, ctx, `getComputedStyle(document.getElementById("nav")).display !== "none"`))

	// Times: the shipped 02:00 Europe/Rome schedule shows its next tick in
	// Rome's zone, labelled; the instances' times show the viewer's zone.
	var stats struct {
		Schedules []struct {
			Name     string    `json:"name"`
			Timezone string    `json:"timezone"`
			NextTick time.Time `json:"next_tick"`
		} `json:"schedules"`
	}
	raw, err := json.Marshal(env.call("GET", "/stats", nil))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &stats))
	var next time.Time
	for _, s := range stats.Schedules {
		if s.Name == "nightly-noop" {
			require.Equal(t, "Europe/Rome", s.Timezone)
			next = s.NextTick
		}
	}
	require.False(t, next.IsZero(), "the shipped nightly-noop schedule is in /stats")
	rome, err := time.LoadLocation("Europe/Rome")
	require.NoError(t, err)
	_, offset := next.In(rome).Zone()
	want := next.In(rome).Format("1/2/2006, 3:04:05 PM") + fmt.Sprintf(" GMT+%d", offset/3600)
	require.Equal(t, want, plainSpaces(textOf(t, ctx, `[data-testid="schedules"] tr[data-schedule="nightly-noop"] .next-tick`)))
	require.Regexp(t, `^\d+/\d+/\d{4}, \d+:\d\d:\d\d [AP]M E[SD]T$`, plainSpaces(textOf(t, ctx, `[data-testid="instances"] tbody tr td:last-child`)),
		"a time outside a schedule shows in the viewer's zone, labelled")

	// The navigation fits a narrow screen: no link runs off its right edge.
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="counts"]`))))
	require.True(t, evalBool(t, ctx, `(() => {
		const nav = document.getElementById("nav"), top = document.getElementById("top");
		const right = Math.max(...[...nav.querySelectorAll("a"), nav].map((a) => a.getBoundingClientRect().right));
		return window.innerWidth === 375 && right <= window.innerWidth && nav.scrollWidth <= nav.clientWidth
			&& top.scrollWidth <= top.clientWidth;
	})()`), "the navigation runs off a 375 px screen")
	screenshot(t, ctx, "narrow")
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1400, 1000)))

	// Dead letters: the table and nothing after it spelling "null".
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(env.base+"/ui/#/dead-letters"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="dead-letters"] tr[data-task]`))))
	require.NotRegexp(t, `\bnull\b`, textOf(t, ctx, "#page"))
	require.True(t, evalBool(t, ctx, `[...document.querySelectorAll("#page, #page *")].every((el) =>
		[...el.childNodes].every((n) => n.nodeType !== Node.TEXT_NODE || n.textContent.trim() !== "null"))`))

	// Webhooks: every subscriber's short id differs, and is a prefix of its
	// id (as wf workflows show and wf tasks show take one).
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(env.base+"/ui/#/webhooks"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="deliveries"] tr[data-task]`))))
	shownIDs := func(table, attr string) {
		t.Helper()
		rows, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="`+table+`"] tbody tr[`+attr+`]`)))
		require.NoError(t, err)
		require.Len(t, rows, 3)
		seen := map[string]bool{}
		for _, r := range rows {
			id := r.AttributeValue(attr)
			shown := textOf(t, ctx, `[data-testid="`+table+`"] tr[`+attr+`="`+id+`"] td.id`)
			prefix := strings.TrimSuffix(shown, "…")
			require.True(t, strings.HasPrefix(id, prefix) && len(prefix) >= 8, "%s shows %q for %s", table, shown, id)
			require.False(t, seen[shown], "%s shows %q twice", table, shown)
			seen[shown] = true
		}
	}
	shownIDs("subscribers", "data-subscriber")
	shownIDs("deliveries", "data-task")
	// A delivery's error keeps its cause in view, whole in its title.
	rows, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="deliveries"] tbody tr[data-task]`)))
	require.NoError(t, err)
	for _, r := range rows {
		id := r.AttributeValue("data-task")
		var whole string
		require.NoError(t, env.pool.QueryRow(context.Background(), `SELECT error FROM tasks.tasks WHERE task_id = $1`, id).Scan(&whole))
		require.Contains(t, whole, "answered 400 Bad Request: the receiver could not read the delivery")
		require.Greater(t, len(whole), 400, "the error is long enough to be shortened")
		cell := `[data-testid="deliveries"] tr[data-task="` + id + `"] td.error`
		shown := textOf(t, ctx, cell)
		require.True(t, strings.HasSuffix(shown, "CAUSE: the signing secret was rotated"), shown)
		require.True(t, strings.HasPrefix(shown, whole[:100]), shown)
		attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(cell), "title"))
		require.NoError(t, err)
		require.Equal(t, whole, attr.Value)
	}
	screenshot(t, ctx, "webhooks")

	require.Empty(t, consoleProblems(), "the dashboard logged errors")
}
