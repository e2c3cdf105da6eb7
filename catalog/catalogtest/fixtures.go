package catalogtest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// NewStore gives a test its own database (internal/dbtest) and a store on
// it holding a catalog per id in catalogs, of tenant "s_" + id, each with
// the collections named.
func NewStore(t testing.TB, catalogs []string, collections ...string) (*pgxpool.Pool, *store.Store) {
	t.Helper()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	ctx := context.Background()
	for _, c := range catalogs {
		_, err := st.CreateCatalog(ctx, store.NewCatalog{ID: c, SchemaName: "s_" + c})
		require.NoError(t, err)
		for _, col := range collections {
			_, err = st.CreateCollection(ctx, store.NewCollection{CatalogID: c, ID: col})
			require.NoError(t, err)
		}
	}
	return pool, st
}

// NewTask returns a CATALOG task of tenant schema and type taskType with
// inputs and a fresh id, as the engine hands it to a handler.
func NewTask(t testing.TB, schema, taskType string, inputs map[string]any) *wftype.Task {
	t.Helper()
	raw, err := json.Marshal(inputs)
	require.NoError(t, err)
	id, ts, err := store.NewID()
	require.NoError(t, err)
	return &wftype.Task{ID: id, Timestamp: ts, SchemaName: schema, Scope: wftype.ScopeCatalog,
		ExecutionMode: wftype.ModeAsync, TaskType: taskType, Inputs: raw}
}

// Ingest runs one ingestion (catalog/ingest, a quiet logger) with inputs,
// which name the catalog, collection, source and format, as a task of
// tenant "s_" + the catalog's id, and fails the test if it fails.
func Ingest(t testing.TB, st *store.Store, inputs map[string]any) ingest.Outputs {
	t.Helper()
	h, err := ingest.New(ingest.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	catalogID, _ := inputs["catalog_id"].(string)
	return Handle[ingest.Outputs](t, h.Handle, NewTask(t, "s_"+catalogID, "ingestion", inputs), reporters.Discard{})
}

// Handle runs the builtin handler h once on task, reporting to rep, fails
// the test if it fails, and returns its outputs decoded into an O.
func Handle[O any](t testing.TB, h builtin.Handler, task *wftype.Task, rep reporters.Reporter) O {
	t.Helper()
	raw, err := h(context.Background(), task, rep)
	require.NoError(t, err)
	var out O
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}
