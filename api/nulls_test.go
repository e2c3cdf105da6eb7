package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNullIsNotAbsent (issue 35 item 1): a JSON null where the document
// says a member cannot be null is a 400 at its pointer that changes
// nothing, never "absent" — above all for a safety flag such as dry_run,
// which null used to turn into the real thing.
func TestNullIsNotAbsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dead, live := tenantJobs(b, true)
	res := b.do("POST", "/catalogs/cat-a/assets", tokAdmin, map[string]any{"asset_id": "DEM", "uri": "gs://bucket/dem.tif", "kind": "raster"})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	taskPath := "/tasks/" + live

	bad := func(name, method, path, token, body, pointer string) requestCase {
		return requestCase{name: name, method: method, path: path, token: token, body: body,
			status: http.StatusBadRequest, pointers: []string{pointer}}
	}
	b.requireUnchanged(t, []requestCase{
		bad("cancel dry_run null", "POST", "/admin/tasks/cancel", tokAdmin, `{"all": true, "dry_run": null}`, "/dry_run"),
		bad("requeue dry_run null", "POST", "/admin/tasks/requeue", tokAdmin, `{"all": true, "dry_run": null}`, "/dry_run"),
		bad("dead letters dry_run null", "POST", "/admin/dead-letters/requeue", tokAdmin, `{"kind": "tasks", "dry_run": null}`, "/dry_run"),
		bad("cancel all null", "POST", "/admin/tasks/cancel", tokAdmin, `{"all": null, "schema_name": ["s_cat_a"]}`, "/all"),
		bad("cancel created_to null", "POST", "/admin/tasks/cancel", tokAdmin, `{"all": true, "created_to": null}`, "/created_to"),
		bad("cancel limit null", "POST", "/admin/tasks/cancel", tokAdmin, `{"all": true, "limit": null}`, "/limit"),
		bad("cancel task_type element null", "POST", "/admin/tasks/cancel", tokAdmin, `{"task_type": ["tenant_job", null]}`, "/task_type/1"),
		bad("task dedup_key null", "POST", "/tasks", tokAdmin, `{"task_type": "noop", "dedup_key": null}`, "/dedup_key"),
		bad("task run_at null", "POST", "/tasks", tokAdmin, `{"task_type": "noop", "run_at": null}`, "/run_at"),
		bad("task priority null", "POST", "/tasks", tokAdmin, `{"task_type": "noop", "priority": null}`, "/priority"),
		bad("task schema_name null", "POST", "/tasks", tokAdmin, `{"task_type": "noop", "schema_name": null}`, "/schema_name"),
		bad("task inputs null", "POST", "/tasks", tokAdmin, `{"task_type": "noop", "inputs": null}`, "/inputs"),
		bad("catalog title null", "POST", "/catalogs", tokAdmin, `{"catalog_id": "cat-n", "title": null}`, "/title"),
		bad("catalog description null", "POST", "/catalogs", tokAdmin, `{"catalog_id": "cat-n", "description": null}`, "/description"),
		bad("asset kind null", "POST", "/catalogs/cat-a/assets", tokAdmin, `{"asset_id": "A2", "uri": "gs://b/a", "kind": null}`, "/kind"),
		bad("asset patch kind null", "PATCH", "/catalogs/cat-a/assets/DEM", tokAdmin, `{"kind": null}`, "/kind"),
		bad("asset patch metadata null", "PATCH", "/catalogs/cat-a/assets/DEM", tokAdmin, `{"metadata": null}`, "/metadata"),
		bad("pause reason null", "POST", "/admin/pauses", tokAdmin, `{"kind": "task_type", "name": "noop", "reason": null}`, "/reason"),
		// Item 3: the pointer names the member as sent, never a Go struct.
		bad("progress owner_id number", "POST", taskPath+"/progress", tokWorker, `{"owner_id": 5, "attempt": 1, "progress": {}}`, "/owner_id"),
		bad("fail owner_id number", "POST", taskPath+"/fail", tokWorker, `{"owner_id": 5, "attempt": 1, "error": "x"}`, "/owner_id"),
		bad("progress attempt too large", "POST", taskPath+"/progress", tokWorker, `{"owner_id": "w", "attempt": 1e30, "progress": {}}`, "/attempt"),
	})
	require.Len(t, dead, 3)
	require.Equal(t, "DEAD_LETTER", b.do("GET", "/tasks/"+dead[0], tokAdmin, nil).json(t)["status"])
}

// TestProgressNotAnObject (issue 35 item 4): a progress that is there but
// is no object is named as such, not as missing.
func TestProgressNotAnObject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a")
	id := b.enqueueTenantJob("s_cat_a")
	b.unchanged(func() {
		res := b.do("POST", "/tasks/"+id+"/progress", tokWorker, `{"owner_id": "w", "attempt": 1, "progress": [1]}`)
		require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
		require.Equal(t, []string{"/progress"}, problemPointers(t, res))
		require.Contains(t, string(res.body), "must be a JSON object")
		require.NotContains(t, string(res.body), "required")
		res = b.do("POST", "/tasks/"+id+"/progress", tokWorker, `{"owner_id": "w", "attempt": 1}`)
		require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
		require.Contains(t, string(res.body), "is required")
	})
}

// TestEmptyQueryValue (issue 35 item 2): an empty query value is a 400
// naming the parameter, as a malformed one is, never taken as absent.
func TestEmptyQueryValue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a", "roads")
	for _, tc := range []struct{ path, parameter string }{
		{"/tasks?limit=", "limit"},
		{"/tasks?limit", "limit"},
		{"/tasks?created_from=", "created_from"},
		{"/tasks?status=", "status"},
		{"/stats?window=", "window"},
		{"/catalogs?limit=", "limit"},
		{"/catalogs?cursor=", "cursor"},
		{"/catalogs/cat-a/collections?limit=", "limit"},
		{"/catalogs/cat-a/assets?status=", "status"},
		{"/admin/dead-letters?kind=", "kind"},
		{"/workflows/runs?workflow=", "workflow"},
		{"/tasks?status=,", "status"},
		{"/tasks?task_type=noop,,echo_sync", "task_type"},
	} {
		requireRefusedParameter(t, b, tc.path, tc.parameter)
	}
}

// requireRefusedParameter checks that GET path is a 400 naming parameter.
func requireRefusedParameter(t *testing.T, b *bundle, path, parameter string) {
	t.Helper()
	res := b.do("GET", path, tokAdmin, nil)
	require.Equal(t, http.StatusBadRequest, res.status, "%s: %s", path, res.body)
	require.Contains(t, string(res.body), `"parameter":"`+parameter+`"`, path)
}

// TestConformanceFindings: what the conformance test found wf taking that
// the document refuses, or answering with a 500, each now a 400 naming the
// member or parameter at fault that changes nothing.
func TestConformanceFindings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a", "roads")
	id := b.enqueueTenantJob("s_cat_a")
	bad := func(name, method, path, token, body, pointer string) requestCase {
		return requestCase{name: name, method: method, path: path, token: token, body: body,
			status: http.StatusBadRequest, pointers: []string{pointer}}
	}
	b.requireUnchanged(t, []requestCase{
		// A 500 before: the attempt overflowed the database's integer.
		bad("progress attempt 1e12", "POST", "/tasks/"+id+"/progress", tokWorker, `{"owner_id": "w", "attempt": 1000000000000, "progress": {}}`, "/attempt"),
		bad("complete attempt 1e12", "POST", "/tasks/"+id+"/complete", tokWorker, `{"owner_id": "w", "attempt": 1000000000000}`, "/attempt"),
		// "" was taken as absent.
		bad("task run_at empty", "POST", "/tasks", tokAdmin, `{"task_type": "noop", "run_at": ""}`, "/run_at"),
		bad("task run_in empty", "POST", "/tasks", tokAdmin, `{"task_type": "noop", "run_in": ""}`, "/run_in"),
		bad("task run_at padded", "POST", "/tasks", tokAdmin, `{"task_type": "noop", "run_at": "2026-01-02T15:04:05Z\t"}`, "/run_at"),
		bad("task run_in padded", "POST", "/tasks", tokAdmin, `{"task_type": "noop", "run_in": " 5m"}`, "/run_in"),
		bad("event scope empty", "POST", "/events", tokAdmin, `{"event_type": "survey.updated", "scope": ""}`, "/scope"),
		bad("catalog schema_name empty", "POST", "/catalogs", tokAdmin, `{"catalog_id": "cat-e", "schema_name": ""}`, "/schema_name"),
		bad("asset kind empty", "POST", "/catalogs/cat-a/assets", tokAdmin, `{"asset_id": "A3", "uri": "gs://b/a", "kind": ""}`, "/kind"),
	})
	for _, tc := range []struct{ path, parameter string }{
		{"/catalogs/cat-a/assets?collection_id=-1", "collection_id"},
		{"/catalogs/cat-a/collections/roads/tiles/0/1/0.mvt", "x"},
		{"/catalogs/cat-a/collections/roads/tiles/1/0/2.mvt", "y"},
		{"/catalogs/cat-a/collections/roads/tiles/23/0/0.mvt", "z"},
	} {
		requireRefusedParameter(t, b, tc.path, tc.parameter)
	}
}
