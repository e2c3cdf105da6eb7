package ingest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
)

// invalidCollection mixes valid features with one of each kind of invalid
// feature; the NaN is written bare, as Python's json module writes it.
const invalidCollection = `{"type": "FeatureCollection", "features": [
{"type": "Feature", "properties": {"code": "ok1", "n": 1}, "geometry": {"type": "Point", "coordinates": [10, 45]}},
{"type": "Feature", "properties": {"code": "open", "n": 2}, "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}},
{"type": "Feature", "properties": {"code": "nan", "n": 3}, "geometry": {"type": "Point", "coordinates": [NaN, 45]}},
{"type": "Feature", "properties": {"code": "circle", "n": 4}, "geometry": {"type": "Circle", "coordinates": [10, 45], "radius": 3}},
{"type": "Feature", "properties": {"name": "no code", "n": 5}, "geometry": {"type": "Point", "coordinates": [11, 45]}},
{"type": "Feature", "properties": {"code": "far", "n": 6}, "geometry": {"type": "Point", "coordinates": [10, 95]}},
{"type": "Feature", "properties": {"code": {"nested": true}}, "geometry": {"type": "Point", "coordinates": [10, 45]}},
{"type": "Feature", "properties": {"code": "ok2", "n": 8}, "geometry": {"type": "LineString", "coordinates": [[10, 45], [11, 46]]}}
]}`

func TestInvalidFeatures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := writeFile(t, "invalid.geojson", invalidCollection)
	out, rep := b.ingestFile(t, map[string]any{"source": path, "format": "geojson", "id_attribute": "code", "asset_id": "A1"})
	require.EqualValues(t, 8, out.Features.Read)
	require.EqualValues(t, 2, out.Features.Created)
	require.EqualValues(t, 6, out.Features.Rejected)
	require.Len(t, rep.envs, 8, "every feature is reported, in source order")

	rejected := []struct {
		index    int
		message  string
		extID    any // nil: none could be derived
		geometry string
	}{
		{1, "invalid geometry: the exterior ring is not closed: it starts at [0, 0] and ends at [0, 1]", "open", `{"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}`},
		{2, "invalid geometry: coordinate [NaN, 45] is not a number (NaN)", "nan", `{"type": "Point", "coordinates": ["NaN", 45]}`},
		{3, `invalid geometry: unknown geometry type "Circle": want Point, MultiPoint, LineString, MultiLineString, Polygon, MultiPolygon or GeometryCollection`, "circle", ""},
		{4, `the id attribute "code" is missing`, nil, ""},
		{5, "invalid geometry: latitude 95 is outside [-90, 90]", "far", `{"type": "Point", "coordinates": [10, 95]}`},
		{6, `the id attribute "code" is an object, want a string or a number`, nil, ""},
	}
	var input []map[string]any
	var doc struct {
		Features []struct {
			Properties map[string]any `json:"properties"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"features":[`+
		`{"properties":{"code":"ok1","n":1}},{"properties":{"code":"open","n":2}},{"properties":{"code":"nan","n":3}},`+
		`{"properties":{"code":"circle","n":4}},{"properties":{"name":"no code","n":5}},{"properties":{"code":"far","n":6}},`+
		`{"properties":{"code":{"nested":true}}}]}`), &doc))
	for _, f := range doc.Features {
		input = append(input, f.Properties)
	}
	for _, r := range rejected {
		env := rep.envs[r.index]
		require.Equal(t, reporters.RecordRejected, env.Status, r.index)
		require.NotNil(t, env.Message)
		require.Equal(t, r.message, *env.Message)
		require.Equal(t, "Feature", env.Record.Type)
		require.Empty(t, env.Record.Stats, "a rejection has no stats")
		require.Equal(t, mustJSON(t, input[r.index]), mustJSON(t, env.Record.Properties), "the input is echoed")
		require.Equal(t, r.extID, env.Record.System[reporters.SystemExternalID])
		require.Equal(t, "A1", env.Record.System[reporters.SystemAssetID])
		require.Equal(t, json.Number(mustJSON(t, r.index)), env.Record.System["source_index"])
		require.NotContains(t, env.Record.System, reporters.SystemGeoID, "nothing was stored")
		if r.geometry == "" {
			require.Nil(t, env.Record.Geometry)
		} else {
			require.JSONEq(t, r.geometry, string(env.Record.Geometry))
		}
	}
	for _, i := range []int{0, 7} {
		require.Equal(t, reporters.RecordSuccess, rep.envs[i].Status)
	}
	rows, current := b.count(t)
	require.Equal(t, 2, rows)
	require.Equal(t, 2, current)
}

func TestMalformedSources(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// An NDJSON line that is not JSON is rejected alone.
	path := writeFile(t, "lines.ndjson", `{"type":"Feature","properties":{"code":"a"},"geometry":{"type":"Point","coordinates":[1,2]}}
{"type":"Feature","properties":{"code":"b"},"geometry":{"type":"Point","coordinates":[1,2]
{"type":"Feature","properties":{"code":"c"},"geometry":{"type":"Point","coordinates":[3,4]}}
`)
	out, rep := b.ingestFile(t, map[string]any{"source": path, "format": "ndjson", "id_attribute": "code"})
	require.EqualValues(t, 2, out.Features.Created)
	require.EqualValues(t, 1, out.Features.Rejected)
	require.Contains(t, *rep.envs[1].Message, "line 2: the record is not a GeoJSON Feature")
	require.Equal(t, json.Number("2"), rep.envs[1].Record.System["source_line"])

	// A FeatureCollection cut short fails the task for good, after storing
	// and reporting what came before.
	path = writeFile(t, "cut.geojson", `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"code":"x"},"geometry":{"type":"Point","coordinates":[1,2]}},
{"type":"Feature","properties":{"code":"y"},"geometry":{"type":"Po`)
	rep = &capture{}
	_, err := b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": path, "format": "geojson", "id_attribute": "code"}), rep)
	require.ErrorContains(t, err, "after 1 records")
	require.ErrorContains(t, err, "malformed near byte")
	requirePermanent(t, err)
	require.Len(t, rep.envs, 1)

	// Members may come before and after the features array; what follows
	// the collection is an error.
	path = writeFile(t, "members.geojson", `{"features": [
{"type":"Feature","properties":{"code":"m"},"geometry":{"type":"Point","coordinates":[1,2]}}
], "bbox": [1, 2, 1, 2], "type": "FeatureCollection", "name": "x"}`)
	out, _ = b.ingestFile(t, map[string]any{"source": path, "format": "geojson", "id_attribute": "code"})
	require.EqualValues(t, 1, out.Features.Created)
	for content, msg := range map[string]string{
		`{"type":"FeatureCollection","features":[]} {}`:                   "unexpected data after the FeatureCollection",
		`{"type":"FeatureCollection","features":[], "features": []}`:      `two "features" arrays`,
		`{"type":"Topology","features":[]}`:                               `"type" is "Topology"`,
		`{"type":"FeatureCollection","features":[{"type":"Feature"} {}]}`: "want ',' or ']' after a feature",
		`{"type":"FeatureCollection"}`:                                    `no "features" array`,
		``:                                                                "the source is empty",
	} {
		path := writeFile(t, "bad.geojson", content)
		_, err := b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": path, "format": "geojson", "id_attribute": "code"}), &capture{})
		require.ErrorContains(t, err, msg, content)
		requirePermanent(t, err)
	}

	// Missing sources, unknown collections and bad inputs fail for good.
	for _, in := range []map[string]any{
		{"source": "/nonexistent/file.geojson", "format": "geojson", "id_attribute": "code"},
		{"source": path, "format": "xml", "id_attribute": "code"},
		{"source": path, "format": "geojson", "id_attribute": "code", "extra": 1},
		{"source": "ftp://host/file", "format": "geojson", "id_attribute": "code"},
	} {
		_, err := b.handler.Handle(b.ctx, newTask(t, in), &capture{})
		require.Error(t, err, "%v", in)
		requirePermanent(t, err)
	}
	task := newTask(t, map[string]any{"source": path, "format": "geojson", "id_attribute": "code"})
	task.Inputs = []byte(`{"catalog_id":"cat","collection_id":"nope","source":"x","format":"geojson","id_attribute":"code"}`)
	_, err = b.handler.Handle(b.ctx, task, &capture{})
	require.ErrorContains(t, err, `collection "nope" of catalog "cat"`)
	requirePermanent(t, err)
}

// TestSourcesOutsideRoots runs the handler as wf run wires it, limited to
// files.local_roots: a local source outside the task's tenant's folder
// there, however it is named, fails the task for good, naming the location
// but no folder of the server's, and reads nothing; a source inside is
// read, a relative one from the tenant's folder in the first root.
func TestSourcesOutsideRoots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := t.TempDir()
	root := filepath.Join(base, "s_cat") // the tenant's folder
	require.NoError(t, os.MkdirAll(filepath.Join(base, "s_other"), 0o755))
	require.NoError(t, os.MkdirAll(root, 0o755))
	fixture, err := os.ReadFile("testdata/admin_regions.geojson")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "regions.geojson"), fixture, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "s_other", "theirs.geojson"), fixture, 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(root, "escape.geojson")))
	require.NoError(t, os.Symlink("/etc", filepath.Join(root, "etc")))
	require.NoError(t, os.Symlink(filepath.Join(base, "s_other"), filepath.Join(root, "other")))
	ctx := b.ctx
	h, err := builtins.New(builtins.Deps{Store: b.store, LocalRoots: []string{base}, Logger: quiet})
	require.NoError(t, err)

	const link = " (through a link leading out of the folder)"
	for source, want := range map[string]struct {
		err   error
		named string
	}{
		"/etc/passwd":        {objio.ErrForbidden, "/etc/passwd"},
		"file:///etc/passwd": {objio.ErrForbidden, "file:///etc/passwd"},
		filepath.Join(base, "s_other", "theirs.geojson"): {objio.ErrForbidden, filepath.Join(base, "s_other", "theirs.geojson")},
		"other/theirs.geojson":                           {objio.ErrForbidden, "other/theirs.geojson" + link},
		"escape.geojson":                                 {objio.ErrForbidden, "escape.geojson" + link},
		"etc/passwd":                                     {objio.ErrForbidden, "etc/passwd" + link},
		"file://" + filepath.ToSlash(filepath.Join(root, "escape.geojson")): {objio.ErrForbidden, "escape.geojson" + link},
		"../../etc/passwd":              {objio.ErrInvalid, "has a '..' segment"},
		"%2e%2e/s_other/theirs.geojson": {objio.ErrInvalid, "has a '..' segment"},
	} {
		rep := &capture{}
		_, err := h.Ingest(ctx, newTask(t, map[string]any{"source": source, "format": "geojson", "id_attribute": "code"}), rep)
		require.ErrorIs(t, err, want.err, source)
		require.ErrorContains(t, err, want.named, source)
		if want.err == objio.ErrForbidden {
			require.ErrorContains(t, err, " is outside the files of tenant s_cat", source)
		}
		require.NotContains(t, strings.ReplaceAll(err.Error(), source, ""), base, "no server folder is named")
		requirePermanent(t, err)
		require.Empty(t, rep.envs, "nothing is read from %s", source)
	}
	rows, _ := b.count(t)
	require.Zero(t, rows)

	for _, source := range []string{"regions.geojson", filepath.Join(root, "regions.geojson"), "file://" + filepath.ToSlash(filepath.Join(root, "regions.geojson"))} {
		rep := &capture{}
		_, err = h.Ingest(ctx, newTask(t, map[string]any{"source": source, "format": "geojson", "id_attribute": "code"}), rep)
		require.NoError(t, err, source)
		require.Len(t, rep.envs, 6, source)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
