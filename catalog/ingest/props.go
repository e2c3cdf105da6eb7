package ingest

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/wfhq/wf/catalog/jsonscan"
)

// decodeFlatObject decodes the common case of a feature's properties, an
// object whose values are all plain strings, numbers, booleans or null,
// without encoding/json's reflection and per-record decoder (a fifth of the
// per-record decoding time and most of its garbage, measured). It returns
// exactly what decodeObject returns for such an object (numbers as
// json.Number, the last of repeated keys), and ok false for anything else:
// a nested value, a string with escapes, control characters or invalid
// UTF-8, a number encoding/json would refuse, malformed text. The caller
// then decodes with encoding/json, which gives the same value or the error.
func decodeFlatObject(b []byte) (map[string]any, bool) {
	m := make(map[string]any, 8)
	ok := true
	err := jsonscan.ObjectMembers(b, func(key string, v []byte) error {
		if !ok {
			return nil
		}
		if !plainString(key) {
			ok = false
			return nil
		}
		switch c := v[0]; {
		case c == '"':
			s := v[1 : len(v)-1]
			if !plainBytes(s) {
				ok = false
				return nil
			}
			m[key] = string(s)
		case c == '-' || (c >= '0' && c <= '9'):
			if !validNumber(v) {
				ok = false
				return nil
			}
			m[key] = json.Number(v)
		case string(v) == "true":
			m[key] = true
		case string(v) == "false":
			m[key] = false
		case string(v) == "null":
			m[key] = nil
		default:
			ok = false
		}
		return nil
	})
	if err != nil || !ok {
		return nil, false
	}
	return m, true
}

// plainString reports whether s needs no JSON escape: no quote, backslash
// or control character, and valid UTF-8 (a key as jsonscan decoded it).
func plainString(s string) bool {
	high := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		high = high || c >= utf8.RuneSelf
	}
	return !high || utf8.ValidString(s)
}

// plainBytes is plainString for the contents of a JSON string.
func plainBytes(s []byte) bool {
	high := false
	for _, c := range s {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		high = high || c >= utf8.RuneSelf
	}
	return !high || utf8.Valid(s)
}

// validNumber reports whether b is a JSON number (RFC 8259's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?).
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if i = digits(b, i+1); i < 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digits(b, i); i < 0 {
			return false
		}
	}
	return i == len(b)
}

// digits is the index past the run of one or more digits of b at i, or -1
// where there is none.
func digits(b []byte, i int) int {
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}
