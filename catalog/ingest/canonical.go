package ingest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendCanonicalJSON appends the canonical JSON text of v, a value decoded
// with json.Decoder.UseNumber (or built of strings, as CSV attributes are),
// to dst. Two values that JSON considers equal encode to the same bytes,
// whatever their source's formatting: object members sorted by key, no
// insignificant space, strings escaped minimally (", \ and control
// characters only), and numbers normalised (see canonicalNumber). It is the
// input of the attributes hash, in the spirit of RFC 8785.
func appendCanonicalJSON(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case string:
		return appendCanonicalString(dst, v), nil
	case json.Number:
		return append(dst, canonicalNumber(string(v))...), nil
	case float64:
		return append(dst, canonicalNumber(strconv.FormatFloat(v, 'g', -1, 64))...), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonicalString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendCanonicalJSON(dst, v[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendCanonicalJSON(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	return nil, fmt.Errorf("error encoding attributes: unexpected %T", v)
}

// canonicalNumber normalises a JSON number literal: an integer literal
// stays as written (so integers beyond 2^53 keep every digit), with -0 as
// 0; any other literal is read as a float64 and written in its shortest
// form, as an integer when it has an integral value below 2^53 (so 1.0, 1e0
// and 1 agree).
func canonicalNumber(lit string) string {
	integer := len(lit) > 0
	for i := 0; i < len(lit); i++ {
		if c := lit[i]; !(c >= '0' && c <= '9') && !(i == 0 && c == '-') {
			integer = false
			break
		}
	}
	if integer {
		if lit == "-0" {
			return "0"
		}
		return lit
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return lit
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// appendCanonicalString appends s as a JSON string, escaping only what JSON
// requires; invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendCanonicalString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
