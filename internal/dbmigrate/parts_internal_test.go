package dbmigrate

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/migrations"
)

// TestEveryMigrationSplits: each embedded file splits, its two parts hold
// every line after the first marker, and a file with a statement before
// any marker, or an unknown marker, is refused with its file and line.
func TestEveryMigrationSplits(t *testing.T) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	require.NoError(t, err)
	for _, name := range names {
		b, err := fs.ReadFile(migrations.FS, name)
		require.NoError(t, err)
		parts, err := splitParts(name, b)
		require.NoError(t, err, name)
		stmts := 0
		for _, line := range strings.Split(string(b), "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
				stmts++
			}
		}
		got := 0
		for _, p := range []Part{PartQueue, PartCatalog} {
			for _, line := range strings.Split(string(parts[p]), "\n") {
				if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
					got++
				}
			}
		}
		require.Equal(t, stmts, got, "%s: every SQL line is in one part", name)
	}

	bad := fstest.MapFS{"001_x.sql": {Data: []byte("-- header\nCREATE TABLE t (a int);\n")}}
	_, err = partFS(bad, PartQueue)
	require.ErrorContains(t, err, "001_x.sql:2: a statement before the first")
	bad = fstest.MapFS{"001_x.sql": {Data: []byte("-- wf:database elsewhere\nSELECT 1;\n")}}
	_, err = partFS(bad, PartCatalog)
	require.ErrorContains(t, err, `001_x.sql:1: unknown database "elsewhere"`)
}
