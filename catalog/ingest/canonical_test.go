package ingest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	decode := func(s string) any {
		dec := json.NewDecoder(bytes.NewReader([]byte(s)))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v))
		return v
	}
	canon := func(s string) string {
		b, err := appendCanonicalJSON(nil, decode(s))
		require.NoError(t, err)
		return string(b)
	}
	// Formatting, member order and number spelling do not matter.
	want := `{"a":[1,0.5,100,-3],"b":{"x":null,"y":true},"s":"<é>\n\"q\""}`
	require.Equal(t, want, canon(`{"s": "<\u00e9>\n\"q\"", "b": {"y": true, "x": null}, "a": [1.0, 5e-1, 1E2, -3]}`))
	require.Equal(t, want, canon(want))
	// Integers keep every digit; -0 is 0; values differ when they differ.
	require.Equal(t, `[123456789012345678901234567890,0,0]`, canon(`[123456789012345678901234567890, -0, -0.0]`))
	require.NotEqual(t, canon(`{"a": "1"}`), canon(`{"a": 1}`))
	require.Equal(t, `"\u0001\t"`, canon(`"\u0001\t"`))
}
