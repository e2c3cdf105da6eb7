// Package jsonscan is a small scanner over JSON text: it finds the members
// of an object, the elements of an array and the end of a value without
// decoding them, which is what the ingestion needs to split GeoJSON
// features quickly. It checks structure (balanced brackets and quotes,
// commas and colons in place) but not the contents of the values it skips;
// those are checked by whoever decodes them. Bare words (NaN, Infinity) are
// accepted as values, so that a non-finite coordinate fails one record
// instead of a whole stream.
package jsonscan

import (
	"encoding/json"
	"errors"
	"fmt"
)

// SkipSpace returns the index of the first non-space byte of b at or after i.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// errTruncated reports JSON text that ends inside a value.
var errTruncated = errors.New("unexpected end of JSON text")

// SkipValue returns the index just after the JSON value that starts at
// b[i] (after optional space).
func SkipValue(b []byte, i int) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) {
		return i, errTruncated
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		var buf [32]byte
		stack := buf[:0] // the closing bracket each open one expects
		for i < len(b) {
			switch c := b[i]; c {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return end, err
				}
				i = end
				continue
			case '{':
				stack = append(stack, '}')
			case '[':
				stack = append(stack, ']')
			case '}', ']':
				if stack[len(stack)-1] != c {
					return i, fmt.Errorf("unexpected %q at byte %d, want %q", c, i, stack[len(stack)-1])
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return i, errTruncated
	case isScalarByte(c):
		start := i
		for i < len(b) && isScalarByte(b[i]) {
			i++
		}
		if i == start {
			return i, fmt.Errorf("unexpected %q at byte %d", c, i)
		}
		return i, nil
	default:
		return i, fmt.Errorf("unexpected %q at byte %d", c, i)
	}
}

// isScalarByte reports whether c may be part of a number or a bare word.
func isScalarByte(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '+' || c == '.'
}

// skipString returns the index just after the string that starts at b[i].
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return i, errTruncated
}

// ObjectMembers calls fn with the key and the raw value of every member of
// the JSON object b (surrounding space allowed), in order. Keys without
// escapes are passed as they are; escaped keys are decoded.
func ObjectMembers(b []byte, fn func(key string, value []byte) error) error {
	var key string
	member := func(i, _ int) (int, error) {
		if i >= len(b) || b[i] != '"' {
			return 0, fmt.Errorf("want a member name at byte %d", i)
		}
		end, err := skipString(b, i)
		if err != nil {
			return 0, err
		}
		if key, err = unquote(b[i:end]); err != nil {
			return 0, err
		}
		i = SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, fmt.Errorf("want ':' after member %q at byte %d", key, i)
		}
		start := SkipSpace(b, i+1)
		if end, err = SkipValue(b, start); err != nil {
			return 0, fmt.Errorf("member %q: %w", key, err)
		}
		return end, fn(key, b[start:end])
	}
	return items(b, '{', '}', "not a JSON object", member, func(int) string { return fmt.Sprintf("member %q", key) })
}

// ArrayElements calls fn with every raw element of the JSON array b.
func ArrayElements(b []byte, fn func(i int, value []byte) error) error {
	element := func(i, k int) (int, error) {
		end, err := SkipValue(b, i)
		if err != nil {
			return 0, fmt.Errorf("element %d: %w", k, err)
		}
		return end, fn(k, b[i:end])
	}
	return items(b, '[', ']', "not a JSON array", element, func(k int) string { return fmt.Sprintf("element %d", k) })
}

// items walks the members of a JSON object or the elements of an array, b
// between open and close (surrounding space allowed; else the error
// notContainer): it calls item with the index where the k-th item starts,
// which reads it and returns the index after it, and checks the ',' between
// items, the closing bracket and that only space follows. name(k) names the
// k-th item in the error about what follows it.
func items(b []byte, open, close byte, notContainer string, item func(i, k int) (int, error), name func(k int) string) error {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != open {
		return errors.New(notContainer)
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == close {
		return trailing(b, i+1)
	}
	for k := 0; ; k++ {
		end, err := item(i, k)
		if err != nil {
			return err
		}
		i = SkipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == close {
			return trailing(b, i+1)
		}
		return fmt.Errorf("want ',' or '%c' after %s at byte %d", close, name(k), i)
	}
}

// trailing checks that only space follows index i.
func trailing(b []byte, i int) error {
	if i = SkipSpace(b, i); i < len(b) {
		return fmt.Errorf("unexpected data after the value at byte %d", i)
	}
	return nil
}

// unquote returns the contents of the JSON string s (with its quotes).
func unquote(s []byte) (string, error) {
	for _, c := range s[1 : len(s)-1] {
		if c == '\\' {
			var out string
			if err := json.Unmarshal(s, &out); err != nil {
				return "", fmt.Errorf("bad string %s: %w", s, err)
			}
			return out, nil
		}
	}
	return string(s[1 : len(s)-1]), nil
}

// Unquote decodes the JSON string value b; it fails when b is not a string.
func Unquote(b []byte) (string, error) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", fmt.Errorf("want a string, got %.20s", b)
	}
	return unquote(b)
}
