package search_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/search"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/livetest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/runnertest"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// bundle is one test's database, a collection cat/towns of tenant s_cat
// and a fake Elasticsearch.
type bundle struct {
	ctx     context.Context
	pool    *pgxpool.Pool
	store   *store.Store
	backend esBackend
	inspect inspector
	bulks   *bulkCounter
	search  *search.Handler
	// indexName is the index of cat/towns.
	indexName string
	dir       string
}

// setup is setupOn the fake.
func setup(t *testing.T, layerConfig string) *bundle {
	t.Helper()
	return setupOn(t, layerConfig, fakeES(t))
}

// setupOn builds the bundle on a backend; the index of cat/towns is
// deleted when the test ends.
func setupOn(t *testing.T, layerConfig string, backend esBackend) *bundle {
	t.Helper()
	pool, st := catalogtest.NewStore(t, []string{"cat"})
	ctx := context.Background()
	_, err := st.CreateCollection(ctx, store.NewCollection{CatalogID: "cat", ID: "towns", LayerConfig: json.RawMessage(layerConfig)})
	require.NoError(t, err)
	settings := backend.settings
	settings.FlushBytes, settings.MaxRetries = 2048, 3
	settings.Backoff = func(int) time.Duration { return time.Millisecond }
	bulks := &bulkCounter{next: http.DefaultTransport}
	settings.Transport = bulks
	h, err := search.New(search.Config{Store: st, Settings: settings})
	require.NoError(t, err)
	b := &bundle{ctx: ctx, pool: pool, store: st, backend: backend, inspect: newInspector(t, settings), bulks: bulks,
		search: h, indexName: h.IndexName("s_cat", "towns"), dir: t.TempDir()}
	t.Cleanup(func() { b.inspect.deleteIndex(t, b.indexName) })
	return b
}

// task returns an elasticsearch task of tenant s_cat with inputs.
func task(t *testing.T, inputs map[string]any) *wftype.Task {
	return catalogtest.NewTask(t, "s_cat", search.HandlerName, inputs)
}

// load ingests NDJSON lines into cat/towns, valid from validFrom.
func (b *bundle) load(t *testing.T, validFrom string, lines ...string) {
	t.Helper()
	f := filepath.Join(b.dir, "towns.ndjson")
	require.NoError(t, os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	catalogtest.Ingest(t, b.store, map[string]any{"catalog_id": "cat", "collection_id": "towns",
		"source": f, "format": "ndjson", "id_attribute": "code", "validity_start": validFrom})
}

// index runs the elasticsearch handler and decodes its outputs.
func (b *bundle) index(t *testing.T, inputs map[string]any) (search.Outputs, *runnertest.Recorder, error) {
	t.Helper()
	rep := &runnertest.Recorder{}
	raw, err := b.search.Index(b.ctx, task(t, inputs), rep)
	var out search.Outputs
	if err == nil {
		require.NoError(t, json.Unmarshal(raw, &out))
	}
	return out, rep, err
}

func town(code string, pop any, x float64) string {
	b, _ := json.Marshal(map[string]any{"type": "Feature", "properties": map[string]any{"code": code, "name": "Town " + code, "pop": pop},
		"geometry": map[string]any{"type": "Point", "coordinates": []float64{x, 45}}})
	return string(b)
}

var towns = map[string]any{"catalog_id": "cat", "collection_id": "towns"}

// TestIndexFullThenIncremental is a contract: on esfake, and on a real
// cluster under make test-live (docs/live-tests.md).
func TestIndexFullThenIncremental(t *testing.T) {
	t.Parallel()
	livetest.Backends(t, fakeES, liveES, indexFullThenIncremental)
}

func indexFullThenIncremental(t *testing.T, backend esBackend) {
	b := setupOn(t, `{"fields": {"pop": "integer", "name": "text"}}`, backend)
	b.load(t, "2024-01-01T00:00:00Z", town("T1", 100, 7.1), town("T2", 200, 7.2), town("T3", 300, 7.3))

	out, rep, err := b.index(t, towns)
	require.NoError(t, err)
	require.Equal(t, b.indexName, out.Index)
	require.True(t, out.Full, "the first run sends everything")
	require.Equal(t, int64(3), out.Indexed)
	require.Equal(t, int64(3), out.Documents, "_count after _refresh")
	require.Equal(t, map[reporters.RecordStatus]int{reporters.RecordSuccess: 3}, rep.ByStatus())
	require.NotNil(t, out.Watermark)

	// The mapping: geometry as geo_shape, declared fields typed, identity as keywords.
	// (A cluster adds the undeclared properties it mapped dynamically.)
	props := b.inspect.mapping(t, out.Index)["properties"].(map[string]any)
	require.Equal(t, "geo_shape", props["geometry"].(map[string]any)["type"])
	require.Equal(t, "keyword", props["geoid"].(map[string]any)["type"])
	typed := props["properties"].(map[string]any)["properties"].(map[string]any)
	require.Equal(t, map[string]any{"type": "long"}, typed["pop"])
	require.Equal(t, map[string]any{"type": "text"}, typed["name"])

	// A document per feature, by geoid, with its GeoJSON geometry.
	geoids := geoidsOf(t, b)
	require.Len(t, geoids, 3)
	for _, id := range geoids {
		d := b.inspect.doc(t, out.Index, id)
		require.NotNil(t, d, id)
		require.Equal(t, id, d["geoid"])
		require.Equal(t, "Point", d["geometry"].(map[string]any)["type"])
	}

	// Nothing changed: nothing sent.
	requests := b.bulks.n.Load()
	out2, rep, err := b.index(t, towns)
	require.NoError(t, err)
	require.False(t, out2.Full)
	require.Equal(t, int64(0), out2.Indexed)
	require.Equal(t, int64(3), out2.Documents)
	require.Equal(t, requests, b.bulks.n.Load(), "no _bulk request for no change")
	require.Empty(t, rep.Envelopes())
	require.Equal(t, out.Watermark, out2.Watermark)

	// T2 changes, T4 is new: only they are sent; T2's document is replaced.
	b.load(t, "2025-01-01T00:00:00Z", town("T1", 100, 7.1), town("T2", 250, 7.2), town("T4", 400, 7.4))
	out3, rep, err := b.index(t, towns)
	require.NoError(t, err)
	require.False(t, out3.Full)
	require.Equal(t, int64(2), out3.Indexed)
	require.Equal(t, int64(4), out3.Documents)
	require.True(t, out3.Watermark.After(*out2.Watermark))
	require.Equal(t, map[reporters.RecordStatus]int{reporters.RecordSuccess: 2}, rep.ByStatus())
	pops := map[string]any{}
	for ext, id := range geoidsOf(t, b) {
		d := b.inspect.doc(t, out.Index, id)
		require.NotNil(t, d, ext)
		require.Equal(t, ext, d["external_id"])
		pops[ext] = d["properties"].(map[string]any)["pop"]
	}
	require.Equal(t, map[string]any{"T1": 100.0, "T2": 250.0, "T3": 300.0, "T4": 400.0}, pops)

	// full: true sends everything again; external versions keep the documents as they are.
	out4, _, err := b.index(t, map[string]any{"catalog_id": "cat", "collection_id": "towns", "full": true})
	require.NoError(t, err)
	require.True(t, out4.Full)
	require.Equal(t, int64(4), out4.Indexed)
	require.Equal(t, int64(4), out4.Documents)
}

// TestIndexDeletesClosedFeatures is a contract (esfake, a real cluster).
func TestIndexDeletesClosedFeatures(t *testing.T) {
	t.Parallel()
	livetest.Backends(t, fakeES, liveES, indexDeletesClosedFeatures)
}

func indexDeletesClosedFeatures(t *testing.T, backend esBackend) {
	b := setupOn(t, `{}`, backend)
	b.load(t, "2024-01-01T00:00:00Z", town("T1", 1, 7.1), town("T2", 2, 7.2))
	out, _, err := b.index(t, towns)
	require.NoError(t, err)
	require.Equal(t, int64(2), out.Documents)
	// A feature whose versions are all closed (deleted) loses its document.
	table, err := store.NewFeatureTable("s_cat", "towns")
	require.NoError(t, err)
	closeFeature(t, b, table, "T2")
	out, rep, err := b.index(t, towns)
	require.NoError(t, err)
	require.Equal(t, int64(1), out.Deleted)
	require.Equal(t, int64(1), out.Documents)
	require.Equal(t, map[reporters.RecordStatus]int{reporters.RecordSuccess: 1}, rep.ByStatus())
	geoids := geoidsOf(t, b)
	require.Nil(t, b.inspect.doc(t, out.Index, geoids["T2"]), "T2's document is gone")
	require.NotNil(t, b.inspect.doc(t, out.Index, geoids["T1"]))
}

// TestIndexItemErrorsAndRetries injects faults: esfake only.
func TestIndexItemErrorsAndRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, `{"fields": {"pop": "integer"}}`)
	b.load(t, "2024-01-01T00:00:00Z", town("T1", 1, 7.1), town("T2", "many", 7.2), town("T3", 3, 7.3))
	geoids := geoidsOf(t, b)

	// T1 is answered 429 then 503, a whole request 429: all retried.
	b.backend.fake.FailItem(geoids["T1"], http.StatusTooManyRequests, http.StatusServiceUnavailable)
	b.backend.fake.RejectBulk(http.StatusTooManyRequests)
	out, rep, err := b.index(t, towns)
	require.NoError(t, err)
	require.Equal(t, int64(2), out.Indexed)
	require.Equal(t, int64(1), out.Failed, "T2's pop does not fit its integer mapping")
	require.Equal(t, int64(2), out.Documents)
	require.Equal(t, map[reporters.RecordStatus]int{reporters.RecordSuccess: 2, reporters.RecordFailed: 1}, rep.ByStatus())
	for _, e := range rep.Envelopes() {
		if e.Status == reporters.RecordFailed {
			require.Equal(t, "T2", e.Record.System[reporters.SystemExternalID])
			require.Contains(t, *e.Message, "document_parsing_exception")
			require.Contains(t, *e.Message, "[properties.pop]")
		}
	}

	// An item refused beyond the retries fails the run, which keeps its
	// watermark, so the next run sends it again.
	b.load(t, "2025-01-01T00:00:00Z", town("T3", 33, 7.3))
	geoids = geoidsOf(t, b)
	b.backend.fake.FailItem(geoids["T3"], 503, 503, 503, 503)
	_, _, err = b.index(t, towns)
	require.ErrorContains(t, err, "still refused with 429 or 5xx after 3 retries")
	require.False(t, wftype.IsPermanent(err), "retried by the engine")
	state, found, err := b.store.GetSearchIndex(b.ctx, b.indexName)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, out.Watermark, state.Watermark)
	out, _, err = b.index(t, towns)
	require.NoError(t, err)
	require.Equal(t, int64(1), out.Indexed)
}

// TestDropAndTenancy is a contract (esfake, a real cluster).
func TestDropAndTenancy(t *testing.T) {
	t.Parallel()
	livetest.Backends(t, fakeES, liveES, dropAndTenancy)
}

func dropAndTenancy(t *testing.T, backend esBackend) {
	b := setupOn(t, `{}`, backend)
	b.load(t, "2024-01-01T00:00:00Z", town("T1", 1, 7.1))
	_, _, err := b.index(t, towns)
	require.NoError(t, err)

	// Another tenant's task cannot index this catalog.
	other := task(t, towns)
	other.SchemaName = "s_other"
	_, err = b.search.Index(b.ctx, other, &runnertest.Recorder{})
	require.ErrorContains(t, err, `the task belongs to tenant "s_other"`)
	require.True(t, wftype.IsPermanent(err))

	drop := func() search.DropOutputs {
		return catalogtest.Handle[search.DropOutputs](t, b.search.Drop, &wftype.Task{SchemaName: wftype.SystemSchema,
			Inputs: json.RawMessage(`{"catalog_id":"cat","schema_name":"s_cat","collections":["towns"]}`)}, &runnertest.Recorder{})
	}
	require.True(t, b.inspect.exists(t, b.indexName))
	require.Equal(t, []string{b.indexName}, drop().Deleted)
	require.False(t, b.inspect.exists(t, b.indexName))
	_, found, err := b.store.GetSearchIndex(b.ctx, b.indexName)
	require.NoError(t, err)
	require.False(t, found, "the watermark is forgotten with the index")
	require.Equal(t, []string{b.indexName}, drop().Absent, "a second drop finds nothing and succeeds")
}

func TestMappingErrors(t *testing.T) {
	t.Parallel()
	_, err := search.Mapping(json.RawMessage(`{"fields": {"pop": "bigint"}}`))
	require.ErrorContains(t, err, `layer_config.fields.pop: type "bigint" is not one of`)
	_, err = search.Mapping(json.RawMessage(`{"fields": ["pop"]}`))
	require.ErrorContains(t, err, "layer_config.fields must map property names to types")
	m, err := search.Mapping(nil)
	require.NoError(t, err)
	require.Equal(t, true, m["dynamic"])
}

// geoidsOf reads the geoid of every feature of cat/towns by external id.
func geoidsOf(t *testing.T, b *bundle) map[string]string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT DISTINCT external_id, geoid::text FROM s_cat.towns`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var ext, id string
		require.NoError(t, rows.Scan(&ext, &id))
		out[ext] = id
	}
	require.NoError(t, rows.Err())
	return out
}

// closeFeature marks a feature's current version deleted, as a deletion
// of features would.
func closeFeature(t *testing.T, b *bundle, table store.FeatureTable, externalID string) {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, `UPDATE `+table.Schema+`.`+table.Collection+
		` SET deleted_at = clock_timestamp() WHERE external_id = $1 AND upper_inf(validity)`, externalID)
	require.NoError(t, err)
}
