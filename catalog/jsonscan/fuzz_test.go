package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/wfhq/wf/catalog/jsonscan"
)

// FuzzScan checks that the scanner never panics nor reads out of bounds,
// and that it accepts every valid JSON text, member by member.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		` {"a": 1, "b\u0022": {"x": [1, "]}"]}, "c" : NaN, "d":"s\"}" } `, `{}`, `[]`, `[1, "a", {"b": [null]}, -2.5e3]`,
		`{"type":"Feature","id":7,"geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":"x"}}`,
		`{"a" 1}`, `{"a": [1, 2}`, `{"a": "x}`, `{"a": 1} x`, `{a: 1}`, `{"a": }`, `[1 2]`, `[1,]`, `"\`, `"a\"`,
		`"\u00e9\n"`, `{"\u0000": 1}`, `{"a":{"b":{"c":{"d":[[[[]]]]}}}}`, `-Infinity`, `]`, `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid := json.Valid(b)
		trimmed := bytes.TrimSpace(b)

		end, err := jsonscan.SkipValue(b, 0)
		if err == nil && (end < 1 || end > len(b)) {
			t.Fatalf("SkipValue(%q) = %d, outside the text", b, end)
		}
		if valid && (err != nil || len(bytes.TrimSpace(b[end:])) > 0) {
			t.Fatalf("SkipValue(%q) = %d, %v: want the whole valid value", b, end, err)
		}

		var keys []string
		err = jsonscan.ObjectMembers(b, func(key string, value []byte) error {
			keys = append(keys, key)
			if valid && !json.Valid(value) {
				t.Fatalf("ObjectMembers(%q): member %q is %q, not valid JSON", b, key, value)
			}
			return nil
		})
		if valid && len(trimmed) > 0 && trimmed[0] == '{' {
			if err != nil {
				t.Fatalf("ObjectMembers(%q): %v", b, err)
			}
			// encoding/json turns invalid UTF-8 into U+FFFD; the scanner
			// passes keys without escapes through as they are.
			var m map[string]json.RawMessage
			if utf8.Valid(b) && json.Unmarshal(b, &m) == nil {
				for _, k := range keys {
					if _, ok := m[k]; !ok {
						t.Fatalf("ObjectMembers(%q): key %q, which encoding/json does not see", b, k)
					}
				}
			}
		}

		n := 0
		err = jsonscan.ArrayElements(b, func(i int, value []byte) error {
			if i != n {
				t.Fatalf("ArrayElements(%q): element %d after %d", b, i, n)
			}
			n++
			if valid && !json.Valid(value) {
				t.Fatalf("ArrayElements(%q): element %d is %q, not valid JSON", b, i, value)
			}
			return nil
		})
		if valid && len(trimmed) > 0 && trimmed[0] == '[' && err != nil {
			t.Fatalf("ArrayElements(%q): %v", b, err)
		}

		s, err := jsonscan.Unquote(trimmed)
		if valid && utf8.Valid(trimmed) && len(trimmed) > 0 && trimmed[0] == '"' {
			var want string
			if json.Unmarshal(trimmed, &want) != nil || err != nil || s != want {
				t.Fatalf("Unquote(%q) = %q, %v; want %q", trimmed, s, err, want)
			}
		}
	})
}
