package catalogtest

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// ReadNDJSON decodes every line of r, an NDJSON stream of lines up to
// 1 MiB, into a T.
func ReadNDJSON[T any](t testing.TB, r io.Reader) []T {
	t.Helper()
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		var v T
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v))
		out = append(out, v)
	}
	require.NoError(t, sc.Err())
	return out
}

// ReadNDJSONFile is ReadNDJSON of the file name.
func ReadNDJSONFile[T any](t testing.TB, name string) []T {
	t.Helper()
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	return ReadNDJSON[T](t, f)
}
