package spec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	b := write("b.yaml", "b")
	a := write("sub/a.yml", "a")
	write("sub/notes.txt", "ignored")
	write(".hidden/c.yaml", "ignored")
	upper := write("D.YAML", "d")

	t.Run("DirectoryRecursiveSorted", func(t *testing.T) {
		t.Parallel()
		srcs, err := ReadSources(dir)
		require.NoError(t, err)
		var names []string
		for _, s := range srcs {
			names = append(names, s.Name)
		}
		require.Equal(t, []string{upper, b, a}, names)
		require.Equal(t, "b", string(srcs[1].Data))
	})

	t.Run("FilesAndDirectoriesOnce", func(t *testing.T) {
		t.Parallel()
		srcs, err := ReadSources(b, dir, b)
		require.NoError(t, err)
		require.Len(t, srcs, 3)
	})

	t.Run("MissingPath", func(t *testing.T) {
		t.Parallel()
		_, err := ReadSources(filepath.Join(dir, "nope"))
		require.EqualError(t, err, "error reading specs: "+filepath.Join(dir, "nope")+" does not exist")
	})

	t.Run("NoSpecFiles", func(t *testing.T) {
		t.Parallel()
		srcs, err := ReadSources(filepath.Join(dir, ".hidden"))
		require.NoError(t, err, "a hidden directory named explicitly is read")
		require.Len(t, srcs, 1)
		empty := t.TempDir()
		_, err = ReadSources(empty)
		require.EqualError(t, err, "error reading specs: no *.yaml or *.yml files in "+empty)
	})
}
