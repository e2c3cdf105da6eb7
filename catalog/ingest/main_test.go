package ingest_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// bundle is one test's database, store and handler.
type bundle struct {
	ctx     context.Context
	pool    *pgxpool.Pool
	store   *store.Store
	handler *ingest.Handler
}

// setup gives a test its own database with catalog "cat" (schema s_cat)
// and collection "regions".
func setup(t *testing.T) *bundle {
	t.Helper()
	pool, st := catalogtest.NewStore(t, []string{"cat"}, "regions")
	h, err := ingest.New(ingest.Config{Store: st, BatchSize: 500, Logger: quiet})
	require.NoError(t, err)
	return &bundle{ctx: context.Background(), pool: pool, store: st, handler: h}
}

// newTask returns an ingestion task of tenant s_cat with inputs.
func newTask(t testing.TB, inputs map[string]any) *wftype.Task {
	t.Helper()
	inputs["catalog_id"], inputs["collection_id"] = "cat", "regions"
	return catalogtest.NewTask(t, "s_cat", "ingestion", inputs)
}

// capture is a reporter that keeps every envelope, as JSON round-tripped
// (what a report file would hold).
type capture struct {
	mu   sync.Mutex
	envs []reporters.Envelope
}

func (c *capture) Report(_ context.Context, env reporters.Envelope) error {
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	back, err := reporters.ValidateEnvelope(b)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.envs = append(c.envs, back)
	return nil
}

func (c *capture) Finish(context.Context) (map[string]any, error) { return nil, nil }

// byExternalID indexes the captured envelopes.
func (c *capture) byExternalID() map[string]reporters.Envelope {
	out := map[string]reporters.Envelope{}
	for _, e := range c.envs {
		if id, ok := e.Record.System[reporters.SystemExternalID].(string); ok {
			out[id] = e
		}
	}
	return out
}

// ingestFile runs the handler on path and returns its outputs and report.
func (b *bundle) ingestFile(t *testing.T, inputs map[string]any) (ingest.Outputs, *capture) {
	t.Helper()
	rep := &capture{}
	return catalogtest.Handle[ingest.Outputs](t, b.handler.Handle, newTask(t, inputs), rep), rep
}

// count returns how many rows, and current rows, the collection's table holds.
func (b *bundle) count(t *testing.T) (rows, current int) {
	t.Helper()
	require.NoError(t, b.pool.QueryRow(b.ctx,
		`SELECT count(*), count(*) FILTER (WHERE upper_inf(validity)) FROM s_cat.regions`).Scan(&rows, &current))
	return rows, current
}

// writeFile writes content into a new file of the test's temporary folder.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := t.TempDir() + "/" + name
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// quiet drops log lines so test output stays readable.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// day is a fixed validity start.
var day = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// requirePermanent checks that err fails its task without a retry.
func requirePermanent(t *testing.T, err error) {
	t.Helper()
	require.True(t, wftype.IsPermanent(err), "want a permanent error, got %v", err)
}
