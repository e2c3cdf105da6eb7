package catalog_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"wf/engine/catalog"
)

func TestDeriveSchemaName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "s_albania", catalog.DeriveSchemaName("albania"))
	require.Equal(t, "s_cat_a", catalog.DeriveSchemaName("cat-a"))
	long := strings.Repeat("a", 63)
	got := catalog.DeriveSchemaName(long)
	require.Len(t, got, 63)
	require.NotEqual(t, got, catalog.DeriveSchemaName(strings.Repeat("a", 62)+"b"), "long ids keep distinct names")
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "cat-a", "c_1", strings.Repeat("x", 63)} {
		require.True(t, catalog.ValidID(ok), ok)
	}
	for _, bad := range []string{"", "-a", "A", "a b", "a/b", "..", "a'--", strings.Repeat("x", 64)} {
		require.False(t, catalog.ValidID(bad), bad)
	}
}
