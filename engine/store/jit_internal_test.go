package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOptionSettings: the settings of a connection's options parameter, in
// each of libpq's forms, and an error for anything that is not a setting.
func TestOptionSettings(t *testing.T) {
	t.Parallel()
	got, err := optionSettings(`-c jit=off  -cwork_mem=8MB --enable-seqscan=off -c search_path=a\ b,c`)
	require.NoError(t, err)
	require.Equal(t, []setting{{"jit", "off"}, {"work_mem", "8MB"}, {"enable_seqscan", "off"}, {"search_path", "a b,c"}}, got)
	got, err = optionSettings("")
	require.NoError(t, err)
	require.Empty(t, got)
	for _, bad := range []string{"-X", "-c", "-c jit", "--=off", "jit=off"} {
		_, err := optionSettings(bad)
		require.Error(t, err, bad)
	}
}
