package jsonscan_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/jsonscan"
)

func TestObjectMembers(t *testing.T) {
	t.Parallel()
	var got []string
	err := jsonscan.ObjectMembers([]byte(` {"a": 1, "b\u0022": {"x": [1, "]}"]}, "c" : NaN, "d":"s\"}" } `), func(k string, v []byte) error {
		got = append(got, k+"="+string(v))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{`a=1`, `b"={"x": [1, "]}"]}`, `c=NaN`, `d="s\"}"`}, got)
	require.NoError(t, jsonscan.ObjectMembers([]byte(`{}`), func(string, []byte) error { return nil }))

	for in, msg := range map[string]string{
		`[1]`:             "not a JSON object",
		`{"a" 1}`:         "want ':'",
		`{"a": 1 "b": 2}`: "want ',' or '}'",
		`{"a": [1, 2}`:    "unexpected '}' at byte 11, want ']'",
		`{"a": [1, 2`:     "unexpected end",
		`{"a": "x}`:       "unexpected end",
		`{"a": 1} x`:      "unexpected data",
		`{a: 1}`:          "want a member name",
		`{"a": }`:         "unexpected '}'",
	} {
		err := jsonscan.ObjectMembers([]byte(in), func(string, []byte) error { return nil })
		require.ErrorContains(t, err, msg, in)
	}
}

func TestArrayElements(t *testing.T) {
	t.Parallel()
	var got []string
	require.NoError(t, jsonscan.ArrayElements([]byte(`[ {"a":[1]}, "x" ,3 ]`), func(i int, v []byte) error {
		got = append(got, string(v))
		return nil
	}))
	require.Equal(t, []string{`{"a":[1]}`, `"x"`, `3`}, got)
	require.ErrorContains(t, jsonscan.ArrayElements([]byte(`[1 2]`), func(int, []byte) error { return nil }), "want ',' or ']'")
	s, err := jsonscan.Unquote([]byte(`"a\nb"`))
	require.NoError(t, err)
	require.Equal(t, "a\nb", s)
	_, err = jsonscan.Unquote([]byte(`5`))
	require.ErrorContains(t, err, "want a string")
}
