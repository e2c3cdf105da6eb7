package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// propsSeeds are objects for the flat decoder: flat ones it decodes, and
// ones it must leave to encoding/json.
var propsSeeds = []string{
	`{"code":"p0_0","row":0,"name":"parcel 0"}`,
	` { "a" : -1.5e+3 , "b" : true, "c": false, "d": null, "e": "é ü", "a": 2 } `,
	`{}`,
	`{"n": 01}`, `{"n": 1.}`, `{"n": .5}`, `{"n": +1}`, `{"n": -}`, `{"n": 1e}`, `{"n": NaN}`, `{"n": 1.5E-07}`,
	`{"s": "a\"b"}`, `{"s": "tab\there"}`, "{\"s\": \"raw\ttab\"}", "{\"s\": \"bad \xff utf8\"}", "{\"k\xff\": 1}",
	`{"o": {"x": 1}}`, `{"l": [1, 2]}`, `{"t": tru}`, `{"a": 1,}`, `{"a": 1} x`, `[1]`, `{"a" 1}`, `{"\u0041": 1}`,
}

// TestDecodeFlatObject: what the flat decoder accepts decodes as
// encoding/json decodes it (decodeObject); what it refuses, it leaves to
// decodeObject.
func TestDecodeFlatObject(t *testing.T) {
	// Every seed, and every seed with one byte replaced by each of the
	// bytes that matter to JSON's grammar.
	const swaps = "\"\\{}[],:.-+eE0129 \t\ntfnul\xc3\xff"
	for _, s := range propsSeeds {
		checkFlatObject(t, []byte(s))
		for i := range len(s) {
			for _, c := range []byte(swaps) {
				b := []byte(s)
				b[i] = c
				checkFlatObject(t, b)
			}
		}
	}
	m, ok := decodeFlatObject([]byte(propsSeeds[0]))
	require.True(t, ok, "the bench's properties take the fast way")
	require.Len(t, m, 3)
}

// FuzzDecodeFlatObject checks the same on any text.
func FuzzDecodeFlatObject(f *testing.F) {
	for _, s := range propsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFlatObject(t, b) })
}

func checkFlatObject(t *testing.T, b []byte) {
	t.Helper()
	fast, ok := decodeFlatObject(b)
	if !ok {
		return
	}
	slow, err := decodeObject(b)
	require.NoError(t, err, "%q: the flat decoder accepted what encoding/json refuses", b)
	require.Equal(t, slow, fast, "%q", b)
}
