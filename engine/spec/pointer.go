package spec

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// The JSON pointers in this package are escaped the way the jsonschema library
// escapes instance locations (RFC 6901, then URL path escaping), so that a
// location it reports can be looked up in a document's position index as is.

// pointerToken escapes one reference token of a JSON pointer.
func pointerToken(s string) string {
	s = strings.ReplaceAll(s, "~", "~0")
	s = strings.ReplaceAll(s, "/", "~1")
	return url.PathEscape(s)
}

// joinPointer appends one unescaped token to an escaped pointer.
func joinPointer(ptr, token string) string {
	return ptr + "/" + pointerToken(token)
}

// splitPointer returns the unescaped tokens of an escaped pointer.
func splitPointer(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			p = u
		}
		p = strings.ReplaceAll(p, "~1", "/")
		parts[i] = strings.ReplaceAll(p, "~0", "~")
	}
	return parts
}

// parentPointer returns the pointer of the value that holds ptr's value.
func parentPointer(ptr string) string {
	if i := strings.LastIndexByte(ptr, '/'); i >= 0 {
		return ptr[:i]
	}
	return ""
}

// lookupPointer returns the value at ptr inside v.
func lookupPointer(v any, ptr string) (any, bool) {
	for _, tok := range splitPointer(ptr) {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// identRE matches the keys a field path can show after a dot.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fieldPath renders a pointer into doc the way a reader of the YAML thinks of
// it: handler.exec.command[0], settings.jobs["my.job"]. The root is "".
func fieldPath(doc any, ptr string) string {
	var b strings.Builder
	v := doc
	for _, tok := range splitPointer(ptr) {
		switch c := v.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(c) {
				v = c[i]
			} else {
				v = nil
			}
			continue
		case map[string]any:
			v = c[tok]
		default:
			v = nil
		}
		switch {
		case !identRE.MatchString(tok):
			b.WriteString("[" + strconv.Quote(tok) + "]")
		case b.Len() == 0:
			b.WriteString(tok)
		default:
			b.WriteString("." + tok)
		}
	}
	return b.String()
}
