package ingest_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/internal/egress"
	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
)

func TestCSV(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wktFile := writeFile(t, "wkt.csv", "\ufeffid,name,WKT\n"+
		"1,square,\"POLYGON ((10 40, 11 40, 11 41, 10 41, 10 40))\"\n"+
		"2,line,\"LINESTRING (0 0, 1 1)\"\n"+
		"3,bad,\"POLYGON ((0 0, 1 0, 1 1, 0 1))\"\n"+
		"4,nan,POINT (NaN 1)\n"+
		"5,short\n")
	out, rep := b.ingestFile(t, map[string]any{"source": wktFile, "format": "csv", "id_attribute": "id"})
	require.Equal(t, ingest.Counts{Read: 5, Created: 2, Rejected: 3}, out.Features)
	byID := rep.byExternalID()
	require.Equal(t, map[string]any{"id": "1", "name": "square"}, byID["1"].Record.Properties, "the geometry column is not an attribute")
	require.Contains(t, *byID["3"].Message, "not closed")
	require.Contains(t, *byID["4"].Message, "NaN")
	require.Contains(t, *rep.envs[4].Message, "line 6 has 2 fields, the header 3")

	pointFile := writeFile(t, "points.csv", "code;Latitude;Longitude;kind\nA;45.5;9.2;city\nB;91;9.2;bad\n")
	out, rep = b.ingestFile(t, map[string]any{"source": pointFile, "format": "csv", "id_attribute": "code",
		"csv": map[string]any{"delimiter": ";"}})
	require.Equal(t, ingest.Counts{Read: 2, Created: 1, Rejected: 1}, out.Features)
	require.JSONEq(t, `{"type":"Point","coordinates":[9.2,45.5]}`, string(rep.envs[0].Record.Geometry))

	named := writeFile(t, "named.csv", "k,east,north\nP,1,2\n")
	out, _ = b.ingestFile(t, map[string]any{"source": named, "format": "csv", "id_attribute": "k",
		"csv": map[string]any{"lon_column": "east", "lat_column": "north"}})
	require.EqualValues(t, 1, out.Features.Created)

	_, err := b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": named, "format": "csv", "id_attribute": "k"}), &capture{})
	require.ErrorContains(t, err, "the CSV header names no geometry column")
	requirePermanent(t, err)
}

func TestFeatureIDFallback(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := writeFile(t, "ids.ndjson", `{"type":"Feature","id":17,"properties":null,"geometry":{"type":"Point","coordinates":[1,2]}}
{"type":"Feature","id":"x","properties":{"id":"from-props"},"geometry":{"type":"Point","coordinates":[1,2]}}
`)
	_, rep := b.ingestFile(t, map[string]any{"source": path, "format": "ndjson", "id_attribute": "id"})
	require.Contains(t, rep.byExternalID(), "17")
	require.Contains(t, rep.byExternalID(), "from-props")
}

// TestRemoteSources reads the fixture over HTTP, from a Cloud Storage
// bucket (an in-process fake GCS server, through the real client) and
// through a file:// URL.
func TestRemoteSources(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fixture, err := os.ReadFile("testdata/admin_regions.geojson")
	require.NoError(t, err)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/regions.geojson" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(fixture)
	}))
	t.Cleanup(srv.Close)

	gcs := gcptest.NewFakeGCS(t)
	gcs.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "data", Name: "in/regions.geojson"},
		Content:     fixture,
	})
	// The test server listens on loopback: allow-listed, as outbound.allow does.
	loopback, err := egress.NewPolicy([]string{"127.0.0.0/8"})
	require.NoError(t, err)
	h, err := ingest.New(ingest.Config{Store: b.store, Logger: quiet,
		Objects: objio.New(objio.Config{GCSEndpoint: gcs.URL() + "/storage/v1/", HTTPClient: loopback.Client(0)})})
	require.NoError(t, err)
	abs, err := filepath.Abs("testdata/admin_regions.geojson")
	require.NoError(t, err)

	for i, src := range []string{srv.URL + "/regions.geojson", "gs://data/in/regions.geojson", "file://" + filepath.ToSlash(abs)} {
		rep := &capture{}
		_, err := h.Handle(b.ctx, newTask(t, map[string]any{"source": src, "format": "geojson", "id_attribute": "code"}), rep)
		require.NoError(t, err, src)
		require.Len(t, rep.envs, 6, src)
		want := "created"
		if i > 0 {
			want = "unchanged"
		}
		require.Equal(t, reporters.RecordSuccess, rep.envs[0].Status)
		require.Equal(t, want, rep.envs[0].Record.System["change"], src)
	}
	for _, src := range []string{srv.URL + "/missing.geojson", "gs://data/in/missing.geojson"} {
		_, err := h.Handle(b.ctx, newTask(t, map[string]any{"source": src, "format": "geojson", "id_attribute": "code"}), &capture{})
		require.ErrorIs(t, err, objio.ErrNotFound, src)
		requirePermanent(t, err)
	}
}
