package builtins_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/catalog/collections"
	"github.com/wfhq/wf/catalog/search"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func TestRegister(t *testing.T) {
	t.Parallel()
	// A missing dependency is an error when the handlers are built, before
	// any task runs.
	_, err := builtins.New(builtins.Deps{})
	require.ErrorContains(t, err, "Store is required")
	// Without folders for local files, the handlers would read any file.
	_, err = builtins.New(builtins.Deps{Store: store.New(nil)})
	require.ErrorContains(t, err, "LocalRoots is required (files.local_roots)")

	h, err := builtins.New(builtins.Deps{Store: store.New(nil), LocalRoots: []string{t.TempDir()},
		Search: search.Settings{Addresses: []string{"http://127.0.0.1:9"}}})
	require.NoError(t, err)
	reg := builtin.NewRegistry()
	require.NoError(t, h.Register(reg))
	require.Subset(t, reg.Names(), builtins.Names())
	// A second registration keeps the handlers and says so.
	require.ErrorContains(t, h.Register(reg), "already registered")

	// Without a cluster the search handlers are not registered: they are
	// marked unserved, naming the setting; the others are registered.
	h, err = builtins.New(builtins.Deps{Store: store.New(nil), LocalRoots: []string{t.TempDir()}})
	require.NoError(t, err)
	reg = builtin.NewRegistry()
	require.NoError(t, h.Register(reg))
	for _, name := range builtins.Names() {
		_, registered := reg.Lookup(name)
		reason, unserved := reg.Unserved(name)
		if name == search.HandlerName || name == search.DropHandlerName {
			require.False(t, registered, name)
			require.True(t, unserved, name)
			require.Equal(t, "elasticsearch.addresses is not set (WF_ELASTICSEARCH_ADDRESSES)", reason)
			continue
		}
		require.True(t, registered, name)
		require.False(t, unserved, name)
	}
}

func TestDropHandlers(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	ctx := context.Background()
	h, err := builtins.New(builtins.Deps{Store: st, LocalRoots: []string{t.TempDir()}})
	require.NoError(t, err)
	reg := builtin.NewRegistry()
	require.NoError(t, h.Register(reg))
	dropCollection, _ := reg.Lookup(collections.CollectionDropName)
	dropCatalog, _ := reg.Lookup(collections.CatalogDropName)
	_, err = st.CreateCatalog(ctx, store.NewCatalog{ID: "cat", SchemaName: "s_cat"})
	require.NoError(t, err)
	for _, c := range []string{"roads", "rivers"} {
		_, err = st.CreateCollection(ctx, store.NewCollection{CatalogID: "cat", ID: c})
		require.NoError(t, err)
		ft, err := store.NewFeatureTable("s_cat", c)
		require.NoError(t, err)
		require.NoError(t, st.CreateFeatureTable(ctx, ft))
	}
	run := func(h builtin.Handler, inputs string) map[string]any {
		t.Helper()
		out, err := h(ctx, &wftype.Task{SchemaName: "system", Inputs: json.RawMessage(inputs)}, reporters.Discard{})
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(out, &m))
		return m
	}
	exists := func(table string) bool {
		var ok bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok))
		return ok
	}

	_, err = st.DeleteCollection(ctx, "cat", "roads")
	require.NoError(t, err)
	out := run(dropCollection, `{"catalog_id":"cat","collection_id":"roads","schema_name":"s_cat"}`)
	require.Equal(t, "dropped", out["outcome"])
	require.False(t, exists("s_cat.roads"))
	require.True(t, exists("s_cat.rivers"))

	_, _, err = st.DeleteCatalog(ctx, "cat")
	require.NoError(t, err)
	out = run(dropCatalog, `{"catalog_id":"cat","schema_name":"s_cat","collections":["rivers"]}`)
	require.Equal(t, "dropped", out["outcome"])
	require.False(t, exists("s_cat.rivers"))
	out = run(dropCatalog, `{"catalog_id":"cat","schema_name":"s_cat","collections":["rivers"]}`)
	require.Equal(t, "absent", out["outcome"], "a second drop finds nothing")

	// Reserved schemas, unsafe names and unknown inputs fail for good.
	for _, c := range []struct {
		h      builtin.Handler
		inputs string
	}{
		{dropCatalog, `{"catalog_id":"x","schema_name":"public","collections":[]}`},
		{dropCollection, `{"catalog_id":"x","collection_id":"../etc","schema_name":"s_x"}`},
		{dropCollection, `{"catalog_id":"x","collection_id":"a","schema_name":"s_x","extra":1}`},
	} {
		_, err := c.h(ctx, &wftype.Task{Inputs: json.RawMessage(c.inputs)}, reporters.Discard{})
		require.Error(t, err, c.inputs)
		require.True(t, wftype.IsPermanent(err), c.inputs)
	}
}
