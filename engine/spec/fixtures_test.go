package spec

import (
	"encoding/json"
	"errors"
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

// fixtures lists the fixtures of a testdata folder: each *.yaml file, and each
// directory (a fixture made of several files).
func fixtures(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		switch {
		case e.IsDir():
			out[e.Name()] = filepath.Join(dir, e.Name())
		case strings.HasSuffix(e.Name(), ".yaml"):
			out[strings.TrimSuffix(e.Name(), ".yaml")] = filepath.Join(dir, e.Name())
		}
	}
	return out
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
	all := fixtures(t, "testdata/invalid")
	require.GreaterOrEqual(t, len(all), 25)
	for name, path := range all {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			set, err := Load(testOptions(), path)
			require.Nil(t, set)
			var errs Errors
			require.True(t, errors.As(err, &errs), "want spec.Errors, got %v", err)
			require.NotEmpty(t, errs)
			golden(t, filepath.Join("testdata/invalid", name+".err"), errs.Error()+"\n")
		})
	}
}

func TestValidFixtures(t *testing.T) {
	t.Parallel()
	all := fixtures(t, "testdata/valid")
	require.NotEmpty(t, all)
	for name, path := range all {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			set, err := Load(testOptions(), path)
			require.NoError(t, err)
			b, err := json.MarshalIndent(set, "", "  ")
			require.NoError(t, err)
			golden(t, filepath.Join("testdata/valid", name+".json"), string(b)+"\n")
		})
	}
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
