package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/stretchr/testify/require"
)

func init() {
	// The contract check reads the files' bodies as the bytes they are.
	for _, ct := range []string{"application/x-ndjson", "application/gzip", "text/csv", "application/octet-stream", "text/html"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
}

// TestTaskFiles downloads what tasks wrote over HTTP: an ingestion's
// detailed report and an export's file, whole and by Range, by the tokens
// that may read the task; another tenant's token, a task without the file
// and a file that is gone answer 404.
func TestTaskFiles(t *testing.T) {
	t.Parallel()
	b := setupPlaces(t)
	var ingestion string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT task_id::text FROM tasks.tasks WHERE task_type = 'ingestion'
		AND inputs ->> 'source' = 'places.geojson'`).Scan(&ingestion))

	// The detailed report: one envelope per feature, as on disk.
	var reportURL string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT outputs ->> 'report_url' FROM tasks.tasks WHERE task_id = $1`, ingestion).Scan(&reportURL))
	onDisk, err := os.ReadFile(strings.TrimPrefix(reportURL, "file://"))
	require.NoError(t, err)
	for _, tok := range []string{tokClientLimited, tokClient, tokAdmin} {
		res := b.do("GET", "/tasks/"+ingestion+"/files/report", tok, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Equal(t, onDisk, res.body, "the report as it was written")
		require.Equal(t, "application/x-ndjson", res.header.Get("Content-Type"))
		require.Contains(t, res.header.Get("Content-Disposition"), "attachment")
	}
	require.Len(t, strings.Split(strings.TrimSpace(string(onDisk)), "\n"), ogcPlaces)
	part := b.doHeaders("GET", "/tasks/"+ingestion+"/files/report", tokClientLimited, nil, http.Header{"Range": {"bytes=10-109"}})
	require.Equal(t, http.StatusPartialContent, part.status, string(part.body))
	require.Equal(t, onDisk[10:110], part.body)
	require.Equal(t, "bytes 10-109/"+itoa(len(onDisk)), part.header.Get("Content-Range"))

	// An export, fetched by its tenant's token.
	res := b.do("POST", "/tasks", tokClientLimited, map[string]any{
		"task_type": "export_features", "schema_name": "s_cat_a",
		"inputs": map[string]any{"catalog_id": "cat-a", "collection_id": "places", "destination": "out/places.geojson", "format": "geojson"},
	})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	export := res.json(t)["task_id"].(string)
	task := b.follow(res.json(t)["status_url"].(string), tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)
	exported, err := os.ReadFile(filepath.Join(b.tenantDir("s_cat_a"), "out", "places.geojson"))
	require.NoError(t, err)
	res = b.do("GET", "/tasks/"+export+"/files/export", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, exported, res.body)
	var fc struct{ Features []any }
	require.NoError(t, json.Unmarshal(res.body, &fc))
	require.Len(t, fc.Features, ogcPlaces)
	part = b.doHeaders("GET", "/tasks/"+export+"/files/export", tokClientLimited, nil, http.Header{"Range": {"bytes=-20"}})
	require.Equal(t, http.StatusPartialContent, part.status)
	require.Equal(t, exported[len(exported)-20:], part.body)

	// Refusals: another tenant, a file the task does not have, an unknown
	// file, a file gone.
	for _, c := range []struct{ path, token string }{
		{"/tasks/" + ingestion + "/files/report", tokClientB},
		{"/tasks/" + export + "/files/export", tokClientB},
		{"/tasks/" + ingestion + "/files/export", tokClientLimited},
		{"/tasks/" + export + "/files/secrets", tokClientLimited},
	} {
		res := b.do("GET", c.path, c.token, nil)
		require.Equal(t, http.StatusNotFound, res.status, "%s: %s", c.path, res.body)
		require.NotContains(t, string(res.body), "Place")
	}
	require.Equal(t, http.StatusBadRequest, b.do("GET", "/tasks/nope/files/report", tokClientLimited, nil).status)
	require.NoError(t, os.Remove(filepath.Join(b.tenantDir("s_cat_a"), "out", "places.geojson")))
	require.Equal(t, http.StatusNotFound, b.do("GET", "/tasks/"+export+"/files/export", tokClientLimited, nil).status)

	// Outputs that name a file outside the report folder (or the tenant's
	// folder) are not served, whatever they say.
	secret := filepath.Join(t.TempDir(), "secret.ndjson")
	require.NoError(t, os.WriteFile(secret, []byte("{}\n"), 0o644))
	_, err = b.pool.Exec(b.ctx, `UPDATE tasks.tasks SET outputs = jsonb_build_object('report_url', $2::text, 'destination', $2::text)
		WHERE task_id = $1`, export, secret)
	require.NoError(t, err)
	for _, f := range []string{"report", "export"} {
		res := b.do("GET", "/tasks/"+export+"/files/"+f, tokAdmin, nil)
		require.Equal(t, http.StatusNotFound, res.status, "%s: %s", f, res.body)
	}
}

// itoa formats n.
func itoa(n int) string { return strconv.Itoa(n) }
