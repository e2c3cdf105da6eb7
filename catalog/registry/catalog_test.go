package registry_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/registry"
)

func TestDeriveSchemaName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "s_albania", registry.DeriveSchemaName("albania"))
	require.Equal(t, "s_cat_a", registry.DeriveSchemaName("cat-a"))
	long := strings.Repeat("a", 63)
	got := registry.DeriveSchemaName(long)
	require.Len(t, got, 63)
	require.NotEqual(t, got, registry.DeriveSchemaName(strings.Repeat("a", 62)+"b"), "long ids keep distinct names")
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "cat-a", "c_1", strings.Repeat("x", 63)} {
		require.True(t, registry.ValidID(ok), ok)
	}
	for _, bad := range []string{"", "-a", "A", "a b", "a/b", "..", "a'--", strings.Repeat("x", 64)} {
		require.False(t, registry.ValidID(bad), bad)
	}
}

func TestValidAssetID(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "PARCELS", "v1.2_b-c", strings.Repeat("X", 255)} {
		require.True(t, registry.ValidAssetID(ok), ok)
	}
	for _, bad := range []string{"", ".a", "-a", "a b", "a/b", strings.Repeat("X", 256)} {
		require.False(t, registry.ValidAssetID(bad), bad)
	}
}
