package api_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
)

// folderState fingerprints a folder: every file's path, kind and content
// hash, and where every link points.
func folderState(t *testing.T, dir string) string {
	t.Helper()
	var sb strings.Builder
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&sb, "link %s -> %s\n", rel, target)
		case d.IsDir():
			fmt.Fprintf(&sb, "dir %s\n", rel)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&sb, "file %s %x\n", rel, sha256.Sum256(b))
		}
		return nil
	}))
	return sb.String()
}

// TestTenantFiles is the files part of the tenant-isolation suite: each
// tenant's files live in its own folder under files.local_roots, and
// tenant A, by every spelling of a location (absolute path, file:// URL,
// '..', percent-encoded '..', a link in its own folder), can neither read
// the file tenant B ingested nor overwrite the file B exported, nor record
// B's file as an asset. Submissions answer 400 at the field; tasks created
// behind the API, where nothing checked them, fail when they run. The
// outcome is checked: B's folder byte for byte, B's tenant, and nothing
// ingested into A.
func TestTenantFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startFeatureEngine(t, b, t.TempDir())
	dirA, dirB := b.tenantDir("s_cat_a"), b.tenantDir("s_cat_b")
	copyFixture(t, dirB)

	for _, tenant := range []struct{ token, id string }{{tokClientLimited, "cat-a"}, {tokClientB, "cat-b"}} {
		res := b.do("POST", "/catalogs", tenant.token, map[string]any{"catalog_id": tenant.id})
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
		res = b.do("POST", "/catalogs/"+tenant.id+"/collections", tenant.token, map[string]any{"collection_id": "regions"})
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
	}
	// B ingests its file and exports its collection, in its own folder.
	res := b.do("POST", "/ingestion/cat-b/regions", tokClientB, regionsBody)
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.Equal(t, "COMPLETED", b.follow(res.json(t)["status_url"].(string), tokClientB)["status"])
	res = b.do("POST", "/tasks", tokClientB, map[string]any{"task_type": "export_features", "schema_name": "s_cat_b",
		"inputs": map[string]any{"catalog_id": "cat-b", "collection_id": "regions", "destination": "exports/regions.ndjson"}})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.Equal(t, "COMPLETED", b.follow(res.json(t)["status_url"].(string), tokClientB)["status"])
	exportB := filepath.Join(dirB, "exports", "regions.ndjson")
	require.FileExists(t, exportB)
	// A link in A's folder into B's (as an operator might leave one).
	require.NoError(t, os.Symlink(dirB, filepath.Join(dirA, "shared")))
	b.idle()
	filesBefore := folderState(t, dirB)
	stateBefore := b.tenantState("cat-b", "s_cat_b")

	sourceB := filepath.Join(dirB, "admin_regions.geojson")
	fileURL := func(p string) string { return "file://" + filepath.ToSlash(p) }
	sources := []string{
		sourceB, fileURL(sourceB),
		"../s_cat_b/admin_regions.geojson", "%2e%2e/s_cat_b/admin_regions.geojson", "..%2fs_cat_b/admin_regions.geojson",
		fileURL(dirA) + "/%2e%2e/s_cat_b/admin_regions.geojson", fileURL(dirA) + "/../s_cat_b/admin_regions.geojson",
		"shared/admin_regions.geojson", filepath.Join(b.root, "admin_regions.geojson"),
	}
	destinations := []string{
		exportB, fileURL(exportB), "../s_cat_b/exports/regions.ndjson", "%2E%2E/s_cat_b/exports/regions.ndjson",
		"shared/exports/regions.ndjson", fileURL(dirA) + "/%2e%2e/s_cat_b/exports/regions.ndjson",
	}
	for _, source := range sources {
		t.Run("ingest "+source, func(t *testing.T) {
			bt := b.in(t)
			body := map[string]any{"source": source, "format": "geojson", "id_attribute": "code", "asset_id": "STOLEN"}
			res := bt.do("POST", "/ingestion/cat-a/regions", tokClientLimited, body)
			require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
			require.Equal(t, []string{"/source"}, problemPointers(t, res))
			res = bt.do("POST", "/catalogs/cat-a/assets", tokClientLimited, map[string]any{"asset_id": "STOLEN", "uri": source, "kind": "vector"})
			require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
			require.Equal(t, []string{"/uri"}, problemPointers(t, res))
		})
	}
	for _, dest := range destinations {
		t.Run("export "+dest, func(t *testing.T) {
			res := b.in(t).do("POST", "/tasks", tokClientLimited, map[string]any{"task_type": "export_features", "schema_name": "s_cat_a",
				"inputs": map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "destination": dest}})
			require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
			require.Equal(t, []string{"/inputs/destination"}, problemPointers(t, res))
		})
	}
	// The same, created behind the API with a client that checks no files
	// (as an embedding program's could): refused when the tasks run.
	var reqs []client.Request
	for _, source := range sources {
		raw, _ := json.Marshal(map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "source": source,
			"format": "geojson", "id_attribute": "code", "asset_id": "STOLEN"})
		reqs = append(reqs, client.Request{TaskType: "ingestion", SchemaName: "s_cat_a", Inputs: raw})
	}
	for _, dest := range destinations {
		raw, _ := json.Marshal(map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "destination": dest})
		reqs = append(reqs, client.Request{TaskType: "export_features", SchemaName: "s_cat_a", Inputs: raw})
	}
	cl := client.New(b.store, b.specs)
	reqs = slices.DeleteFunc(reqs, func(r client.Request) bool { return cl.Check(r) != nil }) // the input schema refuses '..' itself
	require.GreaterOrEqual(t, len(reqs), 10)
	created, err := cl.EnqueueMany(b.ctx, reqs)
	require.NoError(t, err)
	b.idle()
	for _, c := range created {
		got, err := b.store.GetTask(b.ctx, c.Task.ID)
		require.NoError(t, err)
		require.Equal(t, "FAILED", string(got.Status), "%s", got.Inputs)
	}

	// Outcomes: B's files byte for byte, B's tenant, nothing in A.
	require.Equal(t, filesBefore, folderState(t, dirB), "B's folder is untouched")
	require.Equal(t, stateBefore, b.tenantState("cat-b", "s_cat_b"))
	var rows, assets int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM s_cat_a.regions), (SELECT count(*) FROM catalog.assets WHERE catalog_id = 'cat-a')`).Scan(&rows, &assets))
	require.Zero(t, rows, "nothing of B's was ingested into A")
	require.Zero(t, assets, "no asset of A names B's file")
	require.Equal(t, "dir .\nlink shared -> "+dirB+"\n", folderState(t, dirA), "nothing was written in A's folder either")
}
