package spec

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// update rewrites the golden files: go test ./engine/spec -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testOptions are the options every test compiles with: the builtins of
// runners/builtin that the fixtures use.
func testOptions() Options {
	return Options{Builtins: []string{"noop", "sleep", "fail"}, Runtime: testRuntime()}
}

// testRuntime is wf's default configuration, as far as specs are checked
// against it.
func testRuntime() *Runtime {
	return &Runtime{HeartbeatInterval: 30 * time.Second, VisibilityTimeout: 5 * time.Minute}
}

// forEachFixture runs check, in parallel subtests named after them, on
// each fixture under dir (a .yaml file or a folder of them), of which there
// must be at least atLeast.
func forEachFixture(t *testing.T, dir string, atLeast int, check func(t *testing.T, name, path string)) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		name, path := e.Name(), filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
		case strings.HasSuffix(name, ".yaml"):
			name = strings.TrimSuffix(name, ".yaml")
		default:
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, name, path)
		})
	}
	require.GreaterOrEqual(t, n, atLeast, "fixtures under %s", dir)
}

// golden compares got with the golden file, or rewrites it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./engine/spec -update")
	require.Equal(t, string(want), got)
}

func TestInvalidFixtures(t *testing.T) {
	t.Parallel()
	forEachFixture(t, "testdata/invalid", 25, func(t *testing.T, name, path string) {
		errs := loadErrors(t, testOptions(), path)
		golden(t, filepath.Join("testdata/invalid", name+".err"), errs.Error()+"\n")
	})
}

func TestValidFixtures(t *testing.T) {
	t.Parallel()
	forEachFixture(t, "testdata/valid", 1, func(t *testing.T, name, path string) {
		set, err := Load(testOptions(), path)
		require.NoError(t, err)
		b, err := json.MarshalIndent(set, "", "  ")
		require.NoError(t, err)
		golden(t, filepath.Join("testdata/valid", name+".json"), string(b)+"\n")
	})
}

func TestShippedSpecsAreValid(t *testing.T) {
	t.Parallel()
	// The shipped specs also name the builtins registered by catalog/webhooks,
	// catalog/builtins and catalog/gcp.
	opts := testOptions()
	opts.Builtins = append(opts.Builtins, "event_dispatch", "webhook_delivery",
		"ingestion", "export_features", "collection_drop", "catalog_drop", "gdal", "tiles_preseed",
		"gcp_provision", "gcp_catalog_cleanup", "gcs_storage_event", "elasticsearch", "elasticsearch_drop", "dwh_join")
	set, err := Load(opts, "../../specs")
	require.NoError(t, err)
	for _, name := range []string{"noop", "sleep", "fail", "shell_echo"} {
		_, ok := set.TaskType(name)
		require.True(t, ok, "task type %s", name)
	}
	require.Len(t, set.Schedules(), 1)
}
