package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAssetsCommand(t *testing.T) {
	t.Parallel()
	wf := catalogsWF(t)
	code, _, errOut := wf("create", "albania")
	require.Equal(t, ExitOK, code, errOut)
	code, _, errOut = wf("collections", "add", "albania", "roads")
	require.Equal(t, ExitOK, code, errOut)

	code, out, errOut := wf("assets", "add", "--uri", "gs://b/roads.zip", "--collection", "roads", "--kind", "vector",
		"--metadata", `{"survey":2024}`, "albania", "ROADS_2024")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "added asset ROADS_2024 to catalog albania\n", out)
	// A local URI must be in the catalog's tenant's folder under
	// files.local_roots, as a task's file inputs must.
	for _, uri := range []string{"/etc/passwd", "file:///etc/passwd", "../s_other/x.geojson", "%2e%2e/s_other/x.geojson"} {
		code, _, errOut = wf("assets", "add", "--uri", uri, "albania", "STOLEN")
		require.Equal(t, ExitFailure, code, uri)
		require.Contains(t, errOut, "/uri: ", uri)
	}
	code, _, errOut = wf("assets", "add", "--uri", "surveys/roads.geojson", "albania", "LOCAL")
	require.Equal(t, ExitOK, code, errOut)
	code, _, errOut = wf("assets", "add", "--uri", "x", "--kind", "video", "albania", "-bad")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "/kind: must be one of vector, raster, other")

	code, out, _ = wf("assets", "list", "albania")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "ROADS_2024  vector  active  roads")
	require.NotContains(t, out, "STOLEN")
	code, _, errOut = wf("assets", "archive", "albania", "ROADS_2024")
	require.Equal(t, ExitOK, code, errOut)
	code, out, _ = wf("assets", "show", "--format", "json", "albania", "ROADS_2024")
	require.Equal(t, ExitOK, code)
	var a map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &a))
	require.Equal(t, "archived", a["status"])
	require.Equal(t, map[string]any{"survey": 2024.0}, a["metadata"])
	code, _, errOut = wf("assets", "remove", "albania", "ROADS_2024")
	require.Equal(t, ExitOK, code, errOut)
	code, out, _ = wf("assets", "list", "--status", "deleted", "albania")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "ROADS_2024  vector  deleted")
	code, _, _ = wf("assets", "show", "albania", "NOPE")
	require.Equal(t, ExitFailure, code)

	// A URI with credentials is kept, but no view prints them.
	code, _, errOut = wf("assets", "add", "--uri", "https://u:hunter2@data.example.com/r.gpkg?token=t0ps3cret", "albania", "SIGNED")
	require.Equal(t, ExitOK, code, errOut)
	for _, args := range [][]string{{"list", "albania"}, {"show", "albania", "SIGNED"}, {"show", "--format", "json", "albania", "SIGNED"}} {
		code, out, errOut = wf(append([]string{"assets"}, args...)...)
		require.Equal(t, ExitOK, code, errOut)
		require.Contains(t, out, "https://u:REDACTED@data.example.com/r.gpkg?token=REDACTED", args)
		require.NotContains(t, out, "hunter2", args)
		require.NotContains(t, out, "t0ps3cret", args)
	}
}
