package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
)

// startServe runs `wf serve` in-process with the configuration file cfg on
// the database url until stop, which checks that it exited 0; it returns
// the server's base URL once /healthz answers.
func startServe(t *testing.T, cfg, url string) (base string, stop func()) {
	t.Helper()
	addr := inproc.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"wf", "--config", cfg, "--database-url", url, "--log-level", "warn", "serve", "--listen", addr}, &out, &errOut)
	}()
	base = "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("wf serve exited %d: %s", code, errOut.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "wf serve did not start: %v", err)
		// Wall time: a real server is starting in another goroutine.
		time.Sleep(20 * time.Millisecond)
	}
	return base, func() {
		// SIGTERM (the context ending) shuts the server down and exits 0.
		cancel()
		select {
		case code := <-done:
			require.Equal(t, ExitOK, code, errOut.String())
		case <-time.After(30 * time.Second):
			t.Fatal("wf serve did not stop")
		}
	}
}

// post sends a JSON body with a bearer token and returns the status and body.
func post(t *testing.T, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, b
}

func TestServe(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	cfg := writeConfig(t, "specs: [../specs]\ntokens:\n  - {name: ops, role: admin, token: serve-test-token}\n")
	base, stop := startServe(t, cfg, url)

	res, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	code, body := post(t, base+"/catalogs", "serve-test-token", `{"catalog_id": "served"}`)
	require.Equal(t, http.StatusCreated, code, string(body))

	// The dashboard's instances list wf serve (its presence connection,
	// opened beside the server: polled until it shows).
	var stats struct {
		Instances []struct{ Service, Owner, Role string } `json:"instances"`
	}
	require.Eventually(t, func() bool {
		req, err := http.NewRequest("GET", base+"/stats", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer serve-test-token")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.NoError(t, json.NewDecoder(res.Body).Decode(&stats))
		return len(stats.Instances) == 1
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, "api", stats.Instances[0].Role)
	require.Equal(t, "wf", stats.Instances[0].Service)
	require.NotEmpty(t, stats.Instances[0].Owner)
	stop()
}

// TestServeBehindPgBouncerSessionModeWithJITInURL: `wf serve` connects
// through a session-mode PgBouncer with a database URL that sets jit in
// its options, which the bouncer refuses as a startup parameter (the
// setting is made by SET after connecting: store.ConnectWithoutJIT), and
// serves requests.
func TestServeBehindPgBouncerSessionModeWithJITInURL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	bounced := dbtest.PgBouncerSized(t, dbtest.NewDatabase(t), "session", 20)
	join := "?"
	if strings.Contains(bounced, "?") {
		join = "&"
	}
	cfg := writeConfig(t, "specs: [../specs]\ntokens:\n  - {name: ops, role: admin, token: serve-test-token}\n")
	base, stop := startServe(t, cfg, bounced+join+"options=-c%20jit%3Doff")
	code, body := post(t, base+"/catalogs", "serve-test-token", `{"catalog_id": "bounced"}`)
	require.Equal(t, http.StatusCreated, code, string(body))
	stop()
}

// syncDispatchSpec declares a SYNCHRONOUS task type run by a catalog
// builtin that needs the database and a client (event_dispatch).
const syncDispatchSpec = `kind: TaskType
name: dispatch_now
description: Fans an event out to the webhook subscribers in front of its caller.
execution_mode: SYNCHRONOUS
handler: {builtin: event_dispatch}
inputs: {type: object}
`

// TestServeRunsSynchronousCatalogBuiltin: wf serve runs a SYNCHRONOUS task
// whose handler is a catalog builtin with dependencies (event_dispatch reads
// the subscribers and creates deliveries) in front of its caller. The
// handlers get their dependencies when the process is built, whichever
// command runs them; they used to find them only in wf run's context, so
// this run failed under wf serve.
func TestServeRunsSynchronousCatalogBuiltin(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	specs := t.TempDir()
	events, err := os.ReadFile("../specs/events.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(specs, "events.yaml"), events, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(specs, "sync.yaml"), []byte(syncDispatchSpec), 0o644))
	cfg := writeConfig(t, "specs: ["+specs+"]\ndata_dir: "+t.TempDir()+"\ntokens:\n  - {name: ops, role: admin, token: serve-test-token}\n")
	st := store.New(dbtest.PoolFor(t, url))
	sub, err := st.InsertWebhookSubscriber(t.Context(), store.NewWebhookSubscriber{
		URL: "http://127.0.0.1:9/hook", Secret: "0123456789abcdef", EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)
	base, stop := startServe(t, cfg, url)
	defer stop()

	code, body := post(t, base+"/tasks", "serve-test-token",
		`{"task_type": "dispatch_now", "inputs": {"event_id": "e1", "event_type": "catalog.created", "payload": {}}}`)
	require.Equal(t, http.StatusOK, code, string(body))
	var got struct {
		Status  string `json:"status"`
		Outputs struct {
			Created       int      `json:"created"`
			SubscriberIDs []string `json:"subscriber_ids"`
		} `json:"outputs"`
	}
	require.NoError(t, json.Unmarshal(body, &got), string(body))
	require.Equal(t, "COMPLETED", got.Status, string(body))
	require.Equal(t, 1, got.Outputs.Created, string(body))
	require.Equal(t, []string{sub.ID.String()}, got.Outputs.SubscriberIDs)
}
