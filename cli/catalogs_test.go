package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
)

// catalogsWF gives a test a database of its own and returns a function
// that runs `wf catalogs ARGS…` on it: exit code, stdout, stderr.
func catalogsWF(t *testing.T) func(args ...string) (int, string, string) {
	url := dbtest.NewDatabase(t)
	cfg := writeConfig(t, "")
	return func(args ...string) (int, string, string) {
		t.Helper()
		return runWF(t, append([]string{"--config", cfg, "--database-url", url, "catalogs"}, args...)...)
	}
}

func TestCatalogsCommand(t *testing.T) {
	t.Parallel()
	wf := catalogsWF(t)

	code, out, errOut := wf("create", "--title", "Roads of Albania", "--metadata", `{"owner":"gis"}`, "albania")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "created catalog albania (schema_name s_albania)\n", out)

	code, out, errOut = wf("collections", "add", "--layer-config", `{"geometry":"line"}`, "albania", "roads")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "added collection roads to catalog albania\n", out)

	code, out, _ = wf("collections", "list", "--format", "json", "albania")
	require.Equal(t, ExitOK, code)
	var cols []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &cols))
	require.Len(t, cols, 1)
	require.Equal(t, map[string]any{"geometry": "line"}, cols[0]["layer_config"])

	code, out, _ = wf("list")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "albania")
	require.Contains(t, out, "s_albania")

	code, out, _ = wf("show", "--format", "json", "albania")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, `"collection_id": "roads"`)

	// Errors: every bad field named, exit 1; usage errors exit 2.
	code, _, errOut = wf("create", "--schema-name", "pg_x", "Bad Id")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "/catalog_id")
	require.Contains(t, errOut, "/schema_name")
	code, _, errOut = wf("create", "albania")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "already exists")
	code, _, _ = wf("collections", "add", "albania")
	require.Equal(t, ExitUsage, code)
	code, _, _ = wf("create", "--metadata", "[1]", "x")
	require.Equal(t, ExitUsage, code)

	code, out, errOut = wf("collections", "remove", "albania", "roads")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "removed collection roads from catalog albania\n", out)
	code, out, errOut = wf("delete", "albania")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "deleted catalog albania (schema_name s_albania)\n", out)
	code, _, errOut = wf("show", "albania")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "not found")
}
