package api

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// textError is one problem checkJSONText found, at a JSON pointer into the
// body.
type textError struct {
	pointer string
	message string
}

// checkJSONText walks a JSON body once, without decoding it, and returns the
// first thing wrong with it, with the JSON pointer of the value at fault:
// malformed JSON, data after the value, nesting deeper than maxDepth, a
// member name given twice in one object, and strings that hold invalid
// UTF-8, NUL (\u0000) or a lone UTF-16 surrogate. Go's decoder would
// silently replace or keep the last three (and the last duplicate), and
// PostgreSQL refuses them in jsonb and text: they are the client's mistake,
// so they answer 400 here, before anything is written. The walk's recursion
// is bounded by maxDepth.
func checkJSONText(body []byte, maxDepth int) *textError {
	w := jsonWalker{b: body, maxDepth: maxDepth}
	w.value("", 0)
	if w.err == nil {
		w.space()
		if w.i < len(w.b) {
			w.fail("", "unexpected data after the JSON value (at byte %d)", w.i)
		}
	}
	return w.err
}

// jsonWalker is checkJSONText's position in the body.
type jsonWalker struct {
	b        []byte
	i        int
	maxDepth int
	err      *textError
}

func (w *jsonWalker) fail(pointer, format string, args ...any) {
	if w.err == nil {
		w.err = &textError{pointer: pointer, message: fmt.Sprintf(format, args...)}
	}
}

func (w *jsonWalker) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// syntax records a malformed document at the value being read.
func (w *jsonWalker) syntax(pointer, expected string) {
	if w.i >= len(w.b) {
		w.fail(pointer, "is not valid JSON: the body ends early; expected %s", expected)
		return
	}
	r, _ := utf8.DecodeRune(w.b[w.i:])
	w.fail(pointer, "is not valid JSON: unexpected %s at byte %d; expected %s", strconv.QuoteRune(r), w.i, expected)
}

// value reads one value whose pointer is pointer, inside depth containers.
func (w *jsonWalker) value(pointer string, depth int) {
	w.space()
	if w.i >= len(w.b) {
		w.syntax(pointer, "a value")
		return
	}
	switch c := w.b[w.i]; {
	case c == '{':
		w.object(pointer, depth+1)
	case c == '[':
		w.array(pointer, depth+1)
	case c == '"':
		w.str(pointer)
	case c == '-' || c >= '0' && c <= '9':
		w.number(pointer)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(string(w.b[w.i:min(len(w.b), w.i+len(lit))]), lit) {
				w.i += len(lit)
				return
			}
		}
		w.syntax(pointer, "a value")
	}
}

func (w *jsonWalker) tooDeep(pointer string, depth int) bool {
	if depth > w.maxDepth {
		w.fail(pointer, "is nested deeper than %d levels of arrays and objects (http.max_json_depth)", w.maxDepth)
		return true
	}
	return false
}

func (w *jsonWalker) object(pointer string, depth int) {
	if w.tooDeep(pointer, depth) {
		return
	}
	w.i++ // {
	seen := map[string]bool{}
	w.space()
	if w.i < len(w.b) && w.b[w.i] == '}' {
		w.i++
		return
	}
	for w.err == nil {
		w.space()
		if w.i >= len(w.b) || w.b[w.i] != '"' {
			w.syntax(pointer, "a member name in double quotes")
			return
		}
		name, ok := w.str(pointer)
		if !ok {
			return
		}
		member := pointer + "/" + escapePointer(name)
		if seen[name] {
			w.fail(member, "is given twice in one object; give each member once")
			return
		}
		seen[name] = true
		w.space()
		if w.i >= len(w.b) || w.b[w.i] != ':' {
			w.syntax(member, "':'")
			return
		}
		w.i++
		w.value(member, depth)
		if !w.more(pointer, '}') {
			return
		}
	}
}

// more reads what follows a container's member: true after a ',' (another
// member follows), false after the closing byte or an error.
func (w *jsonWalker) more(pointer string, closing byte) bool {
	w.space()
	switch {
	case w.err != nil:
		return false
	case w.i < len(w.b) && w.b[w.i] == ',':
		w.i++
		return true
	case w.i < len(w.b) && w.b[w.i] == closing:
		w.i++
		return false
	}
	w.syntax(pointer, "',' or '"+string(closing)+"'")
	return false
}

func (w *jsonWalker) array(pointer string, depth int) {
	if w.tooDeep(pointer, depth) {
		return
	}
	w.i++ // [
	w.space()
	if w.i < len(w.b) && w.b[w.i] == ']' {
		w.i++
		return
	}
	for n := 0; w.err == nil; n++ {
		w.value(pointer+"/"+strconv.Itoa(n), depth)
		if !w.more(pointer, ']') {
			return
		}
	}
}

// numberRE is JSON's number grammar (RFC 8259).
var numberRE = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)

func (w *jsonWalker) number(pointer string) {
	start := w.i
	for w.i < len(w.b) && strings.IndexByte("+-0123456789.eE", w.b[w.i]) >= 0 {
		w.i++
	}
	if !numberRE.Match(w.b[start:w.i]) {
		w.i = start
		w.syntax(pointer, "a number")
	}
}

// str reads a string (w.b[w.i] is its opening quote) and returns its
// decoded text; problems are reported at pointer.
func (w *jsonWalker) str(pointer string) (string, bool) {
	w.i++ // "
	var sb strings.Builder
	for w.i < len(w.b) {
		c := w.b[w.i]
		switch {
		case c == '"':
			w.i++
			return sb.String(), true
		case c < 0x20:
			w.fail(pointer, "is not valid JSON: a control character (byte %d) inside a string must be escaped", w.i)
			return "", false
		case c == '\\':
			r, ok := w.escape(pointer)
			if !ok {
				return "", false
			}
			sb.WriteRune(r)
		case c < utf8.RuneSelf:
			sb.WriteByte(c)
			w.i++
		default:
			r, size := utf8.DecodeRune(w.b[w.i:])
			if r == utf8.RuneError && size <= 1 {
				w.fail(pointer, "is not valid UTF-8 (byte %d); send text as UTF-8", w.i)
				return "", false
			}
			sb.WriteRune(r)
			w.i += size
		}
	}
	w.syntax(pointer, "the end of the string")
	return "", false
}

// escape reads one escape sequence (w.b[w.i] is its backslash).
func (w *jsonWalker) escape(pointer string) (rune, bool) {
	if w.i+1 >= len(w.b) {
		w.i++
		w.syntax(pointer, "an escape sequence")
		return 0, false
	}
	c := w.b[w.i+1]
	if c != 'u' {
		r, ok := map[byte]rune{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[c]
		if !ok {
			w.i++
			w.syntax(pointer, "an escape sequence")
			return 0, false
		}
		w.i += 2
		return r, true
	}
	r, ok := w.hex4(pointer)
	if !ok {
		return 0, false
	}
	switch {
	case r == 0:
		w.fail(pointer, "contains a NUL character (\\u0000), which is not accepted in text")
		return 0, false
	case r >= 0xDC00 && r <= 0xDFFF:
		w.fail(pointer, "contains a lone UTF-16 surrogate (\\u%04x); a low surrogate must follow a high one", r)
		return 0, false
	case r >= 0xD800 && r <= 0xDBFF:
		if w.i+1 < len(w.b) && w.b[w.i] == '\\' && w.b[w.i+1] == 'u' {
			lo, ok := w.hex4(pointer)
			if !ok {
				return 0, false
			}
			if lo >= 0xDC00 && lo <= 0xDFFF {
				return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, true
			}
		}
		w.fail(pointer, "contains a lone UTF-16 surrogate (\\u%04x); a high surrogate must be followed by a low one", r)
		return 0, false
	}
	return r, true
}

// hex4 reads \uXXXX at w.i.
func (w *jsonWalker) hex4(pointer string) (rune, bool) {
	if w.i+6 > len(w.b) {
		w.i = len(w.b)
		w.syntax(pointer, "four hexadecimal digits after \\u")
		return 0, false
	}
	n, err := strconv.ParseUint(string(w.b[w.i+2:w.i+6]), 16, 16)
	if err != nil {
		w.i += 2
		w.syntax(pointer, "four hexadecimal digits after \\u")
		return 0, false
	}
	w.i += 6
	return rune(n), true
}

// escapePointer escapes a member name as a JSON pointer token (RFC 6901).
func escapePointer(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// checkText reports what is wrong with a text taken from the URL (a path or
// query parameter, a cursor's content): invalid UTF-8, NUL or another
// control character. "" means it is fine.
func checkText(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8; send text as UTF-8, percent-encoded"
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Sprintf("contains the control character %U, which is not accepted", r)
		}
	}
	return ""
}
