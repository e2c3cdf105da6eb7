package ingest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/dbreporter"
	"github.com/wfhq/wf/wftype"
)

// watcher passes envelopes to a database reporter and, at the record
// numbered at, waits until the task's progress in the database shows
// records (seen): the progress is visible while the ingestion runs.
type watcher struct {
	reporters.Reporter
	b     *bundle
	task  *wftype.Task
	at, n int
	seen  int64
}

func (w *watcher) Report(ctx context.Context, env reporters.Envelope) error {
	if err := w.Reporter.Report(ctx, env); err != nil {
		return err
	}
	w.n++
	if w.n != w.at {
		return nil
	}
	// This runs on the handler's writer goroutine: no require here.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); <-tick.C {
		raw, err := w.b.store.GetProgress(ctx, w.task.ID)
		if err != nil {
			return err
		}
		var p dbreporter.Counts
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
		}
		if w.seen = p.Total; w.seen > 0 {
			return nil
		}
	}
	return nil
}

func TestProgressAndCompletedEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := newTask(t, map[string]any{"source": squares(t, 600, nil), "format": "ndjson", "id_attribute": "code"})
	// The task exists in tasks.tasks, so the reporter can write its progress.
	_, err := b.store.EnsurePartitions(b.ctx, task.Timestamp, 1)
	require.NoError(t, err)
	_, err = b.store.InsertTasks(b.ctx, []store.NewTask{{ID: task.ID, SchemaName: "s_cat", Scope: wftype.ScopeCatalog,
		ExecutionMode: wftype.ModeAsync, TaskType: "ingestion", Inputs: task.Inputs}})
	require.NoError(t, err)
	builder, err := dbreporter.NewBuilder(b.store, dbreporter.Config{BatchSize: 50, Interval: 10 * time.Millisecond, Logger: quiet})
	require.NoError(t, err)
	db, err := builder.NewReporter(reporters.TaskInfo{ID: task.ID, SchemaName: "s_cat", TaskType: "ingestion"})
	require.NoError(t, err)
	w := &watcher{Reporter: db, b: b, task: task, at: 400}
	_, err = b.handler.Handle(b.ctx, task, w)
	require.NoError(t, err)
	require.Positive(t, w.seen)
	require.Less(t, w.seen, int64(600), "seen before the end")
	final, err := db.Finish(b.ctx)
	require.NoError(t, err)
	require.Equal(t, dbreporter.Counts{Total: 600, Succeeded: 600}, final["records"])

	// ingestion.completed carries the counts.
	var payload []byte
	var scope, schema string
	require.NoError(t, b.pool.QueryRow(b.ctx,
		`SELECT payload, scope, schema_name FROM tasks.events WHERE event_type = 'ingestion.completed'`).Scan(&payload, &scope, &schema))
	require.Equal(t, "COLLECTION", scope)
	require.Equal(t, "s_cat", schema)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(payload, &ev))
	require.Equal(t, task.ID.String(), ev["task_id"])
	require.Equal(t, "s_cat.regions", ev["table"])
	require.Equal(t, map[string]any{"read": 600.0, "created": 600.0, "versioned": 0.0, "unchanged": 0.0, "rejected": 0.0}, ev["features"])
}

// TestNonFiniteAttributes reads attributes written with bare NaN, as
// Python's json module writes them, with the words quoted.
func TestNonFiniteAttributes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := writeFile(t, "nan.ndjson", `{"type":"Feature","properties":{"code":"a","score":NaN,"max":-Infinity},"geometry":{"type":"Point","coordinates":[1,2]}}`+"\n")
	out, rep := b.ingestFile(t, map[string]any{"source": path, "format": "ndjson", "id_attribute": "code"})
	require.EqualValues(t, 1, out.Features.Created)
	require.Equal(t, map[string]any{"code": "a", "score": "NaN", "max": "-Infinity"}, rep.envs[0].Record.Properties)
	var stored string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT properties->>'score' FROM s_cat.regions`).Scan(&stored))
	require.Equal(t, "NaN", stored)
}
