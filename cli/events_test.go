package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
)

const catalogDeletedSpecs = `kind: TaskType
name: cleanup_catalog
description: Cleans up after a deleted catalog.
handler: {builtin: noop}
inputs:
  type: object
  required: [catalog_id]
  properties:
    catalog_id: {type: string}
---
kind: Subscription
name: cleanup-on-delete
event_type: catalog.deleted
task_type: cleanup_catalog
schema_name: '"system"'
inputs:
  catalog_id: event.payload.catalog_id
`

// eventsEnv is a database, a spec folder and a wf.yaml for the in-process
// events tests.
func eventsEnv(t *testing.T, specs string) (config string, pool func(q string) int) {
	t.Helper()
	url := dbtest.NewDatabase(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "subs.yaml"), []byte(specs), 0o644))
	config = writeConfig(t, fmt.Sprintf(`database_url: %q
data_dir: %q
specs: [%q]
listen: 127.0.0.1:0
poll_interval: 100ms
log_level: warn
log_format: json
`, url, t.TempDir(), dir))
	p := dbtest.PoolFor(t, url)
	return config, func(q string) int {
		var n int
		require.NoError(t, p.QueryRow(context.Background(), q).Scan(&n))
		return n
	}
}

// TestEventsEmitEndToEnd: `wf events emit catalog.deleted …` is refused
// without --force (a type wf emits itself); with it, and a subscription spec, while `wf run` runs in-process, produces the subscribed
// task once; a second emit with the same dedup key emits nothing.
func TestEventsEmitEndToEnd(t *testing.T) {
	t.Parallel()
	config, count := eventsEnv(t, catalogDeletedSpecs)

	ctx, cancel := context.WithCancel(context.Background())
	var runOut, runErr bytes.Buffer
	done := make(chan int)
	go func() { done <- Main(ctx, []string{"wf", "--config", config, "run"}, &runOut, &runErr) }()
	t.Cleanup(func() {
		cancel()
		require.Equal(t, ExitOK, <-done, runErr.String())
	})

	// catalog.deleted is wf's own type: refused without --force, and
	// nothing is written.
	emitDeleted := []string{"--config", config, "events", "emit", "--scope", "CATALOG", "--schema-name", "cat_a",
		"--payload", `{"catalog_id": "a"}`, "--dedup-key", "deleted:a"}
	code, _, errOut := runWF(t, append(emitDeleted, "catalog.deleted")...)
	require.Equal(t, ExitUsage, code, errOut)
	require.Contains(t, errOut, `"catalog.deleted" is a type wf emits itself`)
	require.Contains(t, errOut, "--force")
	require.Zero(t, count(`SELECT count(*) FROM tasks.events`))

	code, out, errOut := runWF(t, append(emitDeleted, "--force", "catalog.deleted")...)
	require.Equal(t, ExitOK, code, errOut)
	require.Regexp(t, `^emitted event [0-9a-f-]{36} \(catalog.deleted\)\n$`, out)
	eventID := strings.Fields(out)[2]

	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM tasks.events`) == 0 &&
			count(`SELECT count(*) FROM tasks.tasks WHERE status = 'COMPLETED'`) == 1
	}, 30*time.Second, 20*time.Millisecond, runErr.String())
	require.Equal(t, 1, count(`SELECT count(*) FROM tasks.tasks`))
	require.Equal(t, 1, count(fmt.Sprintf(`SELECT count(*) FROM tasks.tasks
WHERE task_type = 'cleanup_catalog' AND inputs->>'catalog_id' = 'a' AND dedup_key = 'evt:%s:cleanup_catalog'`, eventID)))

	// While an event with the key is pending a second one is not emitted;
	// here the first was consumed, so the key is free again.
	code, out, errOut = runWF(t, "--config", config, "events", "emit", "--format", "json", "--dedup-key", "once", "--force", "catalog.created")
	require.Equal(t, ExitOK, code, errOut)
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &first))
	require.Equal(t, false, first["deduplicated"])

	code, out, errOut = runWF(t, "--config", config, "events", "list")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "EVENT ID")
}

func TestEventsUsageErrors(t *testing.T) {
	t.Parallel()
	config := writeConfig(t, "database_url: postgres://nobody@127.0.0.1:1/wf?connect_timeout=1\n")
	for _, args := range [][]string{
		{"events", "emit"},
		{"events", "emit", "Bad Type"},
		{"events", "emit", "--scope", "GALAXY", "x.y"},
		{"events", "emit", "--payload", "[1]", "x.y"},
		{"events", "list", "--status", "DONE"},
		{"events", "requeue", "not-a-uuid"},
		{"webhooks", "remove"},
		{"webhooks", "add", "--url", "ftp://x", "--event", "catalog.*", "--secret-file", "/nonexistent"},
	} {
		code, _, errOut := runWF(t, append([]string{"--config", config}, args...)...)
		require.Equal(t, ExitUsage, code, "%v: %s", args, errOut)
	}
}

// TestWebhooksCommands: add, list and remove subscribers; the secret is
// never printed, only its fingerprint.
func TestWebhooksCommands(t *testing.T) {
	t.Parallel()
	config, count := eventsEnv(t, catalogDeletedSpecs)
	const secret = "very-secret-signing-key-0123456789"
	secretFile := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
	wf := func(args ...string) (int, string, string) {
		return runWF(t, append([]string{"--config", config, "webhooks"}, args...)...)
	}

	code, _, errOut := wf("add", "--url", "https://example.com/hook", "--event", "catalog.*")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--secret-env VAR or --secret-file FILE")
	short := filepath.Join(t.TempDir(), "short")
	require.NoError(t, os.WriteFile(short, []byte("tiny"), 0o600))
	code, _, errOut = wf("add", "--url", "https://example.com/hook", "--event", "catalog.*", "--secret-file", short)
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "at least 16")

	// Standard Webhooks: a whsec_ secret, checked before anything is written.
	code, _, errOut = wf("add", "--url", "https://example.com/hook", "--event", "catalog.*", "--secret-file", secretFile, "--signature", "standard")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "starts with whsec_")
	require.NotContains(t, errOut, secret)
	code, _, errOut = wf("add", "--url", "https://example.com/hook", "--event", "catalog.*", "--secret-file", secretFile, "--signature", "svix")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "expected one of wf, standard")
	standardFile := filepath.Join(t.TempDir(), "whsec")
	require.NoError(t, os.WriteFile(standardFile, []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"), 0o600))
	code, out, errOut := wf("add", "--url", "https://example.com/std", "--event", "catalog.*", "--secret-file", standardFile, "--signature", "standard", "--format", "json")
	require.Equal(t, ExitOK, code, errOut)
	var std map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &std))
	require.Equal(t, "standard", std["signature"])
	code, _, errOut = wf("remove", std["subscriber_id"].(string))
	require.Equal(t, ExitOK, code, errOut)

	code, out, errOut = wf("add", "--url", "https://user:pw@example.com/hook", "--event", "catalog.deleted", "--event", "catalog.created",
		"--secret-file", secretFile, "--format", "json")
	require.Equal(t, ExitOK, code, errOut)
	require.NotContains(t, out, secret)
	require.NotContains(t, out, ":pw@")
	var added map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &added))
	id := added["subscriber_id"].(string)
	require.Regexp(t, `^sha256:[0-9a-f]{12}$`, added["secret_fingerprint"])
	require.Equal(t, "wf", added["signature"], "wf's own scheme by default")

	code, out, errOut = wf("list")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, id)
	require.Contains(t, out, "catalog.deleted,catalog.created")
	require.Contains(t, out, added["secret_fingerprint"].(string))
	require.NotContains(t, out, secret)
	require.Equal(t, 1, count(`SELECT count(*) FROM tasks.webhook_subscribers WHERE secret = '`+secret+`'`), "stored so deliveries can be signed")

	code, out, errOut = wf("remove", id)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "removed webhook subscriber "+id+"\n", out)
	code, _, errOut = wf("remove", id)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "not found")
	require.Zero(t, count(`SELECT count(*) FROM tasks.webhook_subscribers`))
}

// TestEnqueueRefusesInternalTypes: a task type whose spec lets only wf
// create it (api.create: []) cannot be enqueued by hand; the command fails
// before it connects.
func TestEnqueueRefusesInternalTypes(t *testing.T) {
	t.Parallel()
	specs, err := filepath.Abs("../specs")
	require.NoError(t, err)
	config := writeConfig(t, "database_url: postgres://nobody@127.0.0.1:1/wf?connect_timeout=1\nspecs: ["+specs+"]\n")
	for _, taskType := range []string{"catalog_drop", "collection_drop", "event_dispatch", "webhook_delivery"} {
		code, _, errOut := runWF(t, "--config", config, "enqueue", "--input", "catalog_id=x", taskType)
		require.Equal(t, ExitFailure, code, errOut)
		require.Contains(t, errOut, "created only by wf itself")
	}
}

// TestWebhooksAddRefusesSpecialAddresses: a receiver on loopback, a
// private network or the cloud metadata address is refused before
// anything is stored, unless outbound.allow opens it.
func TestWebhooksAddRefusesSpecialAddresses(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("very-secret-signing-key-0123456789\n"), 0o600))
	config := writeConfig(t, "database_url: postgres://nobody@127.0.0.1:1/wf?connect_timeout=1\n")
	for _, u := range []string{"http://127.0.0.1:9000/hook", "http://localhost/hook", "http://169.254.169.254/latest",
		"https://10.1.2.3/hook", "http://[::1]/hook", "http://100.64.0.1/"} {
		code, _, errOut := runWF(t, "--config", config, "webhooks", "add", "--url", u, "--event", "catalog.*", "--secret-file", secretFile)
		require.Equal(t, ExitUsage, code, "%s: %s", u, errOut)
		require.Contains(t, errOut, "outbound.allow")
	}
	// Allow-listed, it passes the check (and fails later, on the missing database).
	allowed := writeConfig(t, "database_url: postgres://nobody@127.0.0.1:1/wf?connect_timeout=1\noutbound: {allow: [127.0.0.0/8]}\n")
	code, _, errOut := runWF(t, "--config", allowed, "webhooks", "add", "--url", "http://127.0.0.1:9000/hook", "--event", "catalog.*", "--secret-file", secretFile)
	require.Equal(t, ExitFailure, code, errOut)
}
