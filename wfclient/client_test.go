package wfclient_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/cli"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/wfclient"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

const (
	adminToken  = "go-admin-token-0123456789"
	clientToken = "go-client-token-0123456789"
)

// startWF runs `wf run` (engine and HTTP API) on a throwaway database with
// the shipped specs until the test ends, and returns its base URL once it
// is ready.
func startWF(t *testing.T) string {
	t.Helper()
	specs, err := filepath.Abs("../specs")
	require.NoError(t, err)
	addr := inproc.FreeAddr(t)
	cfg := filepath.Join(t.TempDir(), "wf.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(
		"database_url: %q\ndata_dir: %q\nspecs: [%q]\nlog_format: json\nlog_level: warn\ntokens:\n"+
			"  - {name: admin, role: admin, token: %q}\n  - {name: client, role: client, token: %q}\n",
		dbtest.NewDatabase(t), t.TempDir(), specs, adminToken, clientToken)), 0o600))
	logs := inproc.Start(t, "wf run", func(ctx context.Context, stdout, stderr io.Writer) int {
		return cli.Main(ctx, []string{"wf", "--config", cfg, "run", "--listen", addr, "--poll-interval", "100ms"}, stdout, stderr)
	})
	base := "http://" + addr
	inproc.WaitReady(t, base, logs)
	return base
}

// TestClientAgainstServer exercises every call against a real wf run.
func TestClientAgainstServer(t *testing.T) {
	t.Parallel()
	base := startWF(t)
	ctx := t.Context()
	admin, err := wfclient.New(wfclient.Config{BaseURL: base, Token: adminToken})
	require.NoError(t, err)
	client, err := wfclient.New(wfclient.Config{BaseURL: base, Token: clientToken})
	require.NoError(t, err)
	_, err = wfclient.New(wfclient.Config{BaseURL: "ftp://x", Token: "t"})
	require.Error(t, err)

	// Enqueue, wait, get.
	sub, err := admin.Enqueue(ctx, wfclient.EnqueueRequest{TaskType: "noop"})
	require.NoError(t, err)
	require.Equal(t, wfclient.StatusPending, sub.Status)
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	done, err := admin.Wait(waitCtx, sub.TaskID, 100*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, wfclient.StatusCompleted, done.Status)
	require.NotEmpty(t, done.AttemptHistory)

	// Problems.
	_, err = admin.Get(ctx, "01890000-0000-7000-8000-000000000000")
	require.True(t, wfclient.IsNotFound(err), "%v", err)
	_, err = admin.Enqueue(ctx, wfclient.EnqueueRequest{TaskType: "noop", RunIn: "soon"})
	var p *wfclient.Problem
	require.ErrorAs(t, err, &p)
	require.Equal(t, http.StatusBadRequest, p.Status)
	require.NotEmpty(t, p.Errors)

	// A delayed task: listed, cancelled once, then a conflict.
	later, err := admin.Enqueue(ctx, wfclient.EnqueueRequest{TaskType: "noop", RunIn: "1h"})
	require.NoError(t, err)
	page, err := admin.List(ctx, wfclient.ListParams{Status: []wfclient.TaskStatus{wfclient.StatusPending}, TaskType: []string{"noop"}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, later.TaskID, page.Items[0].TaskID)
	require.True(t, page.Items[0].RunAfter.After(clock.Now().Add(50*time.Minute)))
	first, err := admin.List(ctx, wfclient.ListParams{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, first.NextCursor)
	second, err := admin.List(ctx, wfclient.ListParams{Limit: 1, Cursor: first.NextCursor})
	require.NoError(t, err)
	require.NotEqual(t, first.Items[0].TaskID, second.Items[0].TaskID)
	cancelled, err := admin.Cancel(ctx, later.TaskID)
	require.NoError(t, err)
	require.Equal(t, wfclient.StatusCancelled, cancelled.Status)
	_, err = admin.Cancel(ctx, later.TaskID)
	require.True(t, wfclient.IsConflict(err), "%v", err)

	// Events and ingestion, as a client.
	ev, err := client.EmitEvent(ctx, wfclient.EmitEventRequest{EventType: "go.test", Payload: map[string]any{"n": 1}})
	require.NoError(t, err)
	require.Equal(t, "go.test", ev.EventType)
	require.NoError(t, clientDo(base, "/catalogs", `{"catalog_id": "go-cat"}`))
	require.NoError(t, clientDo(base, "/catalogs/go-cat/collections", `{"collection_id": "roads"}`))
	ing, err := client.SubmitIngestion(ctx, "go-cat", "roads", wfclient.IngestionRequest{
		Source: "roads.geojson", Format: "geojson", IDAttribute: "id", AssetID: "roads-1"})
	require.NoError(t, err)
	require.NotEmpty(t, ing.TaskID)
	_, err = client.SubmitIngestion(ctx, "go-cat", "nope", wfclient.IngestionRequest{
		Source: "x.geojson", Format: "geojson", IDAttribute: "id", AssetID: "a"})
	require.True(t, wfclient.IsNotFound(err), "%v", err)

	// Admin: pause, bulk, resume; a client token may not.
	_, err = client.Pause(ctx, wfclient.PauseTaskType, "noop", "")
	require.ErrorAs(t, err, &p)
	require.Equal(t, http.StatusForbidden, p.Status)
	paused, err := admin.Pause(ctx, wfclient.PauseTaskType, "noop", "go test")
	require.NoError(t, err)
	require.Equal(t, "admin", paused.PausedBy)
	held, err := admin.Enqueue(ctx, wfclient.EnqueueRequest{TaskType: "noop"})
	require.NoError(t, err)
	pauses, err := admin.Pauses(ctx)
	require.NoError(t, err)
	require.Len(t, pauses, 1)
	dry, err := admin.BulkCancel(ctx, wfclient.BulkTasksRequest{TaskType: []string{"noop"}, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, int64(1), *dry.Matched)
	res, err := admin.BulkCancel(ctx, wfclient.BulkTasksRequest{TaskType: []string{"noop"}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Cancelled)
	rq, err := admin.BulkRequeue(ctx, wfclient.BulkTasksRequest{TaskType: []string{"noop"}, Status: []wfclient.TaskStatus{wfclient.StatusCancelled}})
	require.NoError(t, err)
	require.Equal(t, 2, rq.Requeued, "the held task and the delayed one")
	_, err = admin.Resume(ctx, wfclient.PauseTaskType, "noop")
	require.NoError(t, err)
	done, err = admin.Wait(waitCtx, held.TaskID, 100*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, wfclient.StatusCompleted, done.Status)

	// Wait gives up with its context.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	far, err := admin.Enqueue(ctx, wfclient.EnqueueRequest{TaskType: "noop", RunIn: "1h"})
	require.NoError(t, err)
	_, err = admin.Wait(short, far.TaskID, 0)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// clientDo posts a JSON body as the client token (catalog set-up, which
// the client package leaves to the API).
func clientDo(base, path, body string) error {
	req, err := http.NewRequest("POST", base+path, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+clientToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("%s answered %d", path, res.StatusCode)
	}
	return nil
}
