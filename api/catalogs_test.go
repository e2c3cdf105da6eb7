package api_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
)

func TestCatalogs(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Create: the schema name is derived; catalog.created is emitted.
	res := b.do("POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": "cat-a", "title": "A", "metadata": map[string]any{"owner": "gis"}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Equal(t, "/catalogs/cat-a", res.header.Get("Location"))
	cat := res.json(t)
	require.Equal(t, "s_cat_a", cat["schema_name"])
	require.Equal(t, map[string]any{"owner": "gis"}, cat["metadata"])

	res = b.do("POST", "/catalogs", tokClient, map[string]any{"catalog_id": "cat-b", "schema_name": "tenant_b"})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Equal(t, "tenant_b", res.json(t)["schema_name"])

	// The limited client may create only its own catalogs.
	b.unchanged(func() {
		res = b.do("POST", "/catalogs", tokClientLimited, map[string]any{"catalog_id": "cat-c"})
		require.Equal(t, http.StatusForbidden, res.status)
	})

	// Duplicates conflict.
	b.unchanged(func() {
		res = b.do("POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": "cat-a"})
		require.Equal(t, http.StatusConflict, res.status)
		res = b.do("POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": "cat-z", "schema_name": "tenant_b"})
		require.Equal(t, http.StatusConflict, res.status)
		require.Contains(t, string(res.body), "schema_name")
	})

	// Collections.
	res = b.do("POST", "/catalogs/cat-a/collections", tokClientLimited, map[string]any{
		"collection_id": "roads", "title": "Roads", "layer_config": map[string]any{"geometry": "line", "srid": 4326},
	})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Equal(t, "/catalogs/cat-a/collections/roads", res.header.Get("Location"))
	res = b.do("POST", "/catalogs/cat-a/collections", tokAdmin, map[string]any{"collection_id": "rivers"})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Equal(t, map[string]any{}, res.json(t)["layer_config"])

	res = b.do("GET", "/catalogs/cat-a/collections/roads", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status)
	require.Equal(t, "line", res.json(t)["layer_config"].(map[string]any)["geometry"])

	// Lists, with pagination.
	res = b.do("GET", "/catalogs/cat-a/collections?limit=1", tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status)
	page := res.json(t)
	require.Len(t, page["items"], 1)
	require.NotEmpty(t, page["next_cursor"])
	res = b.do("GET", "/catalogs/cat-a/collections?limit=1&cursor="+url.QueryEscape(page["next_cursor"].(string)), tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status)
	page2 := res.json(t)
	require.Len(t, page2["items"], 1)
	require.Nil(t, page2["next_cursor"])
	require.NotEqual(t, page["items"], page2["items"])

	res = b.do("GET", "/catalogs", tokAdmin, nil)
	require.Len(t, res.json(t)["items"], 2)
	// A limited token sees only its catalogs.
	res = b.do("GET", "/catalogs", tokClientLimited, nil)
	items := res.json(t)["items"].([]any)
	require.Len(t, items, 1)
	require.Equal(t, "cat-a", items[0].(map[string]any)["catalog_id"])
	for _, p := range []string{"/catalogs/cat-b", "/catalogs/cat-b/collections", "/catalogs/cat-b/collections/x"} {
		res = b.do("GET", p, tokClientLimited, nil)
		require.Equal(t, http.StatusNotFound, res.status, p)
	}
	// ... and gets the same 404 for a catalog of another tenant as for a missing one.
	other := b.do("GET", "/catalogs/cat-b", tokClientLimited, nil).json(t)
	missing := b.do("GET", "/catalogs/cat-nope", tokAdmin, nil).json(t)
	require.Equal(t, missing["title"], other["title"])
	require.Equal(t, missing["type"], other["type"])

	// Delete a collection, then the catalog: events in the outbox.
	b.unchanged(func() {
		b.requireAnswers(t,
			requestCase{"AnotherTenants", "DELETE", "/catalogs/cat-b", tokClientLimited, nil, http.StatusNotFound, nil},
			requestCase{"UnknownCollection", "DELETE", "/catalogs/cat-a/collections/nope", tokAdmin, nil, http.StatusNotFound, nil})
	})
	res = b.do("DELETE", "/catalogs/cat-a/collections/rivers", tokAdmin, nil)
	require.Equal(t, http.StatusNoContent, res.status)
	res = b.do("DELETE", "/catalogs/cat-a", tokClientLimited, nil)
	require.Equal(t, http.StatusNoContent, res.status)
	res = b.do("GET", "/catalogs/cat-a", tokAdmin, nil)
	require.Equal(t, http.StatusNotFound, res.status)

	got := dbtest.Strings(t, b.ctx, b.pool, `SELECT event_type || ' ' || schema_name || ' ' || payload::text FROM tasks.events ORDER BY event_id`)
	require.Equal(t, []string{
		`catalog.created s_cat_a {"catalog_id": "cat-a", "schema_name": "s_cat_a"}`,
		`catalog.created tenant_b {"catalog_id": "cat-b", "schema_name": "tenant_b"}`,
		`collection.created s_cat_a {"catalog_id": "cat-a", "collection_id": "roads"}`,
		`collection.created s_cat_a {"catalog_id": "cat-a", "collection_id": "rivers"}`,
		`collection.deleted s_cat_a {"catalog_id": "cat-a", "collection_id": "rivers"}`,
		`catalog.deleted s_cat_a {"catalog_id": "cat-a", "collections": ["roads"], "schema_name": "s_cat_a"}`,
	}, got)
}

func TestCatalogsBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a", "roads")

	cases := []requestCase{
		{"MalformedJSON", "POST", "/catalogs", tokAdmin, `{"catalog_id": `, 400, nil},
		{"NotAnObject", "POST", "/catalogs", tokAdmin, `["x"]`, 400, []string{""}},
		{"TrailingData", "POST", "/catalogs", tokAdmin, `{"catalog_id": "x"} {}`, 400, nil},
		{"EmptyBody", "POST", "/catalogs", tokAdmin, ``, 400, nil},
		{"UnknownField", "POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": "x", "owner": "me"}, 400, []string{"/owner"}},
		{"WrongType", "POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": 5}, 400, []string{"/catalog_id"}},
		{"WrongTypeMetadata", "POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": "x", "metadata": []int{1}}, 400, []string{"/metadata"}},
		{"SQLInID", "POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": "x'; DROP TABLE catalog.catalogs; --"}, 400, []string{"/catalog_id"}},
		{"TraversalInID", "POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": "../etc"}, 400, []string{"/catalog_id"}},
		{"ManyErrors", "POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": "X", "schema_name": "pg_x", "metadata": "no"}, 400, []string{"/catalog_id", "/schema_name", "/metadata"}},
		{"ReservedSchema", "POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": "x", "schema_name": "system"}, 400, []string{"/schema_name"}},
		{"CollectionBadID", "POST", "/catalogs/cat-a/collections", tokAdmin, map[string]any{"collection_id": "Roads!"}, 400, []string{"/collection_id"}},
		{"CollectionBadConfig", "POST", "/catalogs/cat-a/collections", tokAdmin, map[string]any{"collection_id": "x", "layer_config": 3}, 400, []string{"/layer_config"}},
		{"CollectionDuplicate", "POST", "/catalogs/cat-a/collections", tokAdmin, map[string]any{"collection_id": "roads"}, 409, nil},
		{"CollectionUnknownCatalog", "POST", "/catalogs/nope/collections", tokAdmin, map[string]any{"collection_id": "x"}, 404, nil},
		{"SQLInPath", "GET", "/catalogs/x'%20OR%20'1'='1", tokAdmin, nil, 400, nil},
		{"SQLInPathDelete", "DELETE", "/catalogs/cat-a';DELETE%20FROM%20catalog.catalogs;--", tokAdmin, nil, 400, nil},
		{"BadLimit", "GET", "/catalogs?limit=0", tokAdmin, nil, 400, nil},
		{"BadCursor", "GET", "/catalogs?cursor=%27%3B--", tokAdmin, nil, 400, nil},
		{"UnknownQuery", "GET", "/catalogs?sort=id", tokAdmin, nil, 400, nil},
		{"NoToken", "POST", "/catalogs", "", map[string]any{"catalog_id": "x"}, 401, nil},
		{"WrongTenant", "POST", "/catalogs/cat-a/collections", tokClientLimited + "x", map[string]any{"collection_id": "x"}, 401, nil},
	}
	b.requireUnchanged(t, cases)

	b.parallel(t, "WrongMediaType", func(t *testing.T, b *bundle) {
		b.unchanged(func() {
			res := b.doHeaders("POST", "/catalogs", tokAdmin, `catalog_id=x`, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
			require.Equal(t, http.StatusUnsupportedMediaType, res.status)
		})
	})
}
