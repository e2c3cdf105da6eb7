package search_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/search"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// TestUnconfiguredFailsForGood: a Handler without a cluster says so
// (Configured), and its handlers, called all the same, fail for good
// naming the setting; they never complete as if they had indexed.
func TestUnconfiguredFailsForGood(t *testing.T) {
	t.Parallel()
	_, st := catalogtest.NewStore(t, []string{"cat"})
	h, err := search.New(search.Config{Store: st})
	require.NoError(t, err)
	require.False(t, h.Configured())

	_, err = h.Index(t.Context(), task(t, towns), reporters.Discard{})
	require.ErrorContains(t, err, "elasticsearch.addresses is not set (WF_ELASTICSEARCH_ADDRESSES)")
	require.True(t, wftype.IsPermanent(err))
	drop := catalogtest.NewTask(t, "system", search.DropHandlerName, map[string]any{"catalog_id": "cat", "schema_name": "s_cat", "collections": []string{"towns"}})
	_, err = h.Drop(t.Context(), drop, reporters.Discard{})
	require.ErrorContains(t, err, "elasticsearch.addresses is not set")
	require.True(t, wftype.IsPermanent(err))
}
