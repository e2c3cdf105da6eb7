package export_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/export"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// bundle is one test's database with an ingested collection.
type bundle struct {
	ctx   context.Context
	store *store.Store
}

// task returns an export task of tenant s_cat with inputs.
func task(t *testing.T, inputs map[string]any) *wftype.Task {
	return catalogtest.NewTask(t, "s_cat", "export", inputs)
}

// counter counts reported envelopes.
type counter struct{ n int }

func (c *counter) Report(context.Context, reporters.Envelope) error { c.n++; return nil }
func (c *counter) Finish(context.Context) (map[string]any, error)   { return nil, nil }

// setup ingests the admin regions fixture into cat/regions in 2024, then a
// changed version of Colorado (US-CO) in 2025.
func setup(t *testing.T) *bundle {
	t.Helper()
	_, st := catalogtest.NewStore(t, []string{"cat"}, "regions")
	catalogtest.Ingest(t, st, map[string]any{"catalog_id": "cat", "collection_id": "regions",
		"source": "../ingest/testdata/admin_regions.geojson", "format": "geojson", "id_attribute": "code",
		"validity_start": "2024-01-01T00:00:00Z"})
	changed := filepath.Join(t.TempDir(), "co.ndjson")
	require.NoError(t, os.WriteFile(changed, []byte(`{"type":"Feature","properties":{"code":"US-CO","name":"Colorado","note":"changed"},"geometry":{"type":"Point","coordinates":[-105.5,39]}}`+"\n"), 0o644))
	catalogtest.Ingest(t, st, map[string]any{"catalog_id": "cat", "collection_id": "regions",
		"source": changed, "format": "ndjson", "id_attribute": "code", "validity_start": "2025-01-01T00:00:00Z"})
	return &bundle{ctx: context.Background(), store: st}
}

// codes returns the external ids of exported features, which decode as
// the per-record envelope's records (AppendFeature writes them so).
func codes(fs []reporters.Record) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.System["external_id"].(string))
	}
	return out
}

func TestExport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h, err := export.New(export.Config{Store: b.store, BatchSize: 2})
	require.NoError(t, err)
	dir := t.TempDir()
	run := func(inputs map[string]any) export.Outputs {
		t.Helper()
		inputs["catalog_id"], inputs["collection_id"] = "cat", "regions"
		rep := &counter{}
		out := catalogtest.Handle[export.Outputs](t, h.Handle, task(t, inputs), rep)
		require.EqualValues(t, rep.n, out.Features, "every exported feature is reported")
		return out
	}

	// The current versions, as NDJSON in external id order.
	out := run(map[string]any{"destination": filepath.Join(dir, "now.ndjson")})
	require.Equal(t, export.Outputs{Table: "s_cat.regions", Destination: filepath.Join(dir, "now.ndjson"), Format: "ndjson", Features: 6}, out)
	f, err := os.Open(filepath.Join(dir, "now.ndjson"))
	require.NoError(t, err)
	now := catalogtest.ReadNDJSON[reporters.Record](t, f)
	require.NoError(t, f.Close())
	require.Equal(t, []string{"IT-82", "MT", "US-CO", "US-UT", "US-WY", "ZA"}, codes(now))
	co := now[2]
	require.Equal(t, "Feature", co.Type)
	require.Equal(t, co.ID, co.System["geoid"])
	require.Equal(t, "changed", co.Properties["note"])
	require.JSONEq(t, `{"type":"Point","coordinates":[-105.5,39]}`, string(co.Geometry))
	require.Equal(t, "[2025-01-01T00:00:00Z,)", co.System["validity"])
	require.Contains(t, co.Stats, "centroid")

	// As of mid-2024, as one FeatureCollection: Colorado's first version.
	out = run(map[string]any{"destination": "file://" + filepath.ToSlash(filepath.Join(dir, "2024.geojson")), "format": "geojson",
		"as_of": "2024-06-01T00:00:00Z"})
	require.EqualValues(t, 6, out.Features)
	raw, err := os.ReadFile(filepath.Join(dir, "2024.geojson"))
	require.NoError(t, err)
	var fc struct {
		Type     string             `json:"type"`
		Features []reporters.Record `json:"features"`
	}
	require.NoError(t, json.Unmarshal(raw, &fc))
	require.Equal(t, "FeatureCollection", fc.Type)
	require.Len(t, fc.Features, 6)
	require.Equal(t, "[2024-01-01T00:00:00Z,2025-01-01T00:00:00Z)", fc.Features[2].System["validity"])
	require.NotContains(t, fc.Features[2].Properties, "note")

	// Before anything was valid: an empty collection, still well-formed.
	out = run(map[string]any{"destination": filepath.Join(dir, "empty.geojson"), "format": "geojson", "as_of": "2000-01-01T00:00:00Z"})
	require.Zero(t, out.Features)
	raw, err = os.ReadFile(filepath.Join(dir, "empty.geojson"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &fc))
	require.Empty(t, fc.Features)

	// A bbox around the Alps and Sicily keeps Sicily and Malta only.
	out = run(map[string]any{"destination": filepath.Join(dir, "bbox.ndjson"), "bbox": []float64{10, 35, 16, 39}})
	f, err = os.Open(filepath.Join(dir, "bbox.ndjson"))
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, []string{"IT-82", "MT"}, codes(catalogtest.ReadNDJSON[reporters.Record](t, f)))
	require.EqualValues(t, 2, out.Features)
}

func TestExportToBucket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gcs := gcptest.NewFakeGCS(t, "exports")
	h, err := export.New(export.Config{Store: b.store, Objects: objio.New(objio.Config{GCSEndpoint: gcs.URL() + "/storage/v1/"})})
	require.NoError(t, err)
	_, err = h.Handle(b.ctx, task(t, map[string]any{"catalog_id": "cat", "collection_id": "regions",
		"destination": "gs://exports/cat/regions.ndjson"}), &counter{})
	require.NoError(t, err)
	obj, err := gcs.GetObject("exports", "cat/regions.ndjson")
	require.NoError(t, err)
	require.Len(t, catalogtest.ReadNDJSON[reporters.Record](t, strings.NewReader(string(obj.Content))), 6)
	require.Equal(t, "application/x-ndjson", obj.ContentType)
}

func TestExportRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h, err := export.New(export.Config{Store: b.store})
	require.NoError(t, err)
	dest := filepath.Join(t.TempDir(), "x.ndjson")
	for inputs, msg := range map[string]string{
		`{"catalog_id":"cat","collection_id":"regions"}`:                                       `"destination" is required`,
		`{"catalog_id":"cat","collection_id":"regions","destination":"x","format":"csv"}`:      `"format" is "csv"`,
		`{"catalog_id":"cat","collection_id":"regions","destination":"x","bbox":[1,2,3]}`:      `"bbox" has 3 numbers`,
		`{"catalog_id":"cat","collection_id":"regions","destination":"x","bbox":[3,2,1,4]}`:    `min <= max`,
		`{"catalog_id":"cat","collection_id":"nope","destination":"` + dest + `"}`:             `collection "nope" of catalog "cat"`,
		`{"catalog_id":"cat","collection_id":"regions","destination":"https://example.com/x"}`: "read only",
		`{"catalog_id":"cat","collection_id":"regions","destination":"x","extra":true}`:        "unknown field",
	} {
		tk := task(t, nil)
		tk.Inputs = json.RawMessage(inputs)
		_, err := h.Handle(b.ctx, tk, &counter{})
		require.ErrorContains(t, err, msg, inputs)
		require.True(t, wftype.IsPermanent(err), inputs)
	}
	_, err = os.Stat(dest)
	require.ErrorIs(t, err, os.ErrNotExist, "a refused export writes nothing")

	// A cancelled export leaves nothing behind either.
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	_, err = h.Handle(ctx, task(t, map[string]any{"catalog_id": "cat", "collection_id": "regions", "destination": dest}), &counter{})
	require.Error(t, err)
	entries, err := os.ReadDir(filepath.Dir(dest))
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestExportOutsideRoots runs the handler as wf run wires it, limited to
// files.local_roots: a local destination outside the task's tenant's folder
// there, however it is named, fails the task for good, naming the location
// but no folder of the server's, and writes nothing; one inside is
// written, a relative one below the tenant's folder in the first root.
func TestExportOutsideRoots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base, outside := t.TempDir(), t.TempDir()
	root := filepath.Join(base, "s_cat") // the tenant's folder
	require.NoError(t, os.MkdirAll(filepath.Join(base, "s_other"), 0o755))
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "elsewhere")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "linked.ndjson"), filepath.Join(root, "linked.ndjson")))
	ctx := b.ctx
	h, err := builtins.New(builtins.Deps{Store: b.store, LocalRoots: []string{base}})
	require.NoError(t, err)
	run := func(dest string) (json.RawMessage, *counter, error) {
		rep := &counter{}
		raw, err := h.Export(ctx, task(t, map[string]any{"catalog_id": "cat", "collection_id": "regions", "destination": dest}), rep)
		return raw, rep, err
	}

	const link = " (through a link leading out of the folder)"
	for dest, want := range map[string]struct {
		err   error
		named string
	}{
		filepath.Join(outside, "x.ndjson"):                               {objio.ErrForbidden, filepath.Join(outside, "x.ndjson")},
		"file://" + filepath.ToSlash(filepath.Join(outside, "y.ndjson")): {objio.ErrForbidden, "file://" + filepath.ToSlash(filepath.Join(outside, "y.ndjson"))},
		filepath.Join(base, "s_other", "theirs.ndjson"):                  {objio.ErrForbidden, filepath.Join(base, "s_other", "theirs.ndjson")},
		filepath.Join(base, "at-root.ndjson"):                            {objio.ErrForbidden, filepath.Join(base, "at-root.ndjson")},
		"elsewhere/w.ndjson":                                             {objio.ErrForbidden, "elsewhere/w.ndjson" + link},
		"linked.ndjson":                                                  {objio.ErrForbidden, "linked.ndjson" + link},
		"../" + filepath.Base(outside) + "/z.ndjson":                     {objio.ErrInvalid, "has a '..' segment"},
		"%2e%2e/s_other/z.ndjson":                                        {objio.ErrInvalid, "has a '..' segment"},
	} {
		_, rep, err := run(dest)
		require.ErrorIs(t, err, want.err, dest)
		require.ErrorContains(t, err, want.named, dest)
		if want.err == objio.ErrForbidden {
			require.ErrorContains(t, err, " is outside the files of tenant s_cat", dest)
		}
		require.NotContains(t, strings.ReplaceAll(err.Error(), dest, ""), base, "no server folder is named")
		require.True(t, wftype.IsPermanent(err), dest)
		require.Zero(t, rep.n, dest)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, entries, "a refused export writes nothing")
	entries, err = os.ReadDir(filepath.Join(base, "s_other"))
	require.NoError(t, err)
	require.Empty(t, entries, "nor in another tenant's folder")

	for dest, path := range map[string]string{
		"exports/regions.ndjson":                         filepath.Join(root, "exports", "regions.ndjson"),
		filepath.Join(root, "abs.ndjson"):                filepath.Join(root, "abs.ndjson"),
		"file://" + filepath.ToSlash(root) + "/f.ndjson": filepath.Join(root, "f.ndjson"),
	} {
		_, rep, err := run(dest)
		require.NoError(t, err, dest)
		require.Equal(t, 6, rep.n, dest)
		f, err := os.Open(path)
		require.NoError(t, err, dest)
		require.Len(t, catalogtest.ReadNDJSON[reporters.Record](t, f), 6, dest)
		require.NoError(t, f.Close())
	}
}
