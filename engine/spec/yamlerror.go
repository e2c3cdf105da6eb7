package spec

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file turns what the YAML parser says about a broken file into an
// error at the line of the mistake that names the fix. The parser reports
// some mistakes where the enclosing mapping starts, and in its own words
// ("found character that cannot start any token"); the author wants to know
// which value to quote.

// checkEncoding reports a file that is not UTF-8, at its first bad byte.
func checkEncoding(src Source) *Error {
	data := src.Data
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return &Error{File: src.Name, Line: 1, Col: 1, Message: "the file is saved as UTF-16; save it as UTF-8"}
	case utf8.Valid(data):
		return nil
	}
	off := 0
	for off < len(data) {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	lineStart := bytes.LastIndexByte(data[:off], '\n') + 1
	col := 1 + utf8.RuneCount(data[lineStart:off])
	return &Error{File: src.Name, Line: line, Col: col, Message: fmt.Sprintf(
		"the file is not UTF-8: byte 0x%02X is not valid UTF-8 (was the file saved as Latin-1 or Windows-1252?); save it as UTF-8", data[off])}
}

// yamlDirectiveRE matches a %YAML directive line.
var yamlDirectiveRE = regexp.MustCompile(`(?m)^%YAML[ \t]+(\S+)[ \t]*(#.*)?\r?$`)

// acceptYAMLDirective blanks out %YAML 1.1 and 1.2 directives, which the
// parser refuses for 1.2 although the specs are read as YAML 1.2 anyway
// (yes, no and on are strings, 0755 is a number). Line and column numbers
// stay as they were. Another version is an error at its line.
func acceptYAMLDirective(src Source) ([]byte, *Error) {
	locs := yamlDirectiveRE.FindAllSubmatchIndex(src.Data, -1)
	if locs == nil {
		return src.Data, nil
	}
	data := bytes.Clone(src.Data)
	for _, l := range locs {
		version := string(src.Data[l[2]:l[3]])
		if version != "1.1" && version != "1.2" {
			line := 1 + bytes.Count(src.Data[:l[0]], []byte("\n"))
			return nil, &Error{File: src.Name, Line: line, Col: 1, Message: fmt.Sprintf(
				"unsupported YAML version %s; write %%YAML 1.2, or leave the directive out", version)}
		}
		data[l[0]] = '#' // a comment now, of the same length
	}
	return data, nil
}

// yamlSyntaxError words a syntax error of the YAML parser, reported at line
// (1-based; 0 when the parser gave none), with the fix, and moves it to the
// line of the mistake when the parser placed it elsewhere.
func yamlSyntaxError(src Source, line int, msg string) Error {
	lines := strings.Split(strings.ReplaceAll(string(src.Data), "\r\n", "\n"), "\n")
	at := func(l, col int, format string, args ...any) Error {
		return Error{File: src.Name, Line: l, Col: col, Message: fmt.Sprintf(format, args...)}
	}
	// Quotes first: an unclosed or badly nested quote is reported where the
	// mapping starts, lines before the real mistake.
	if l, col, m, ok := findQuoteMistake(lines); ok {
		return at(l, col, "%s", m)
	}
	if m := unknownAnchorRE.FindStringSubmatch(msg); m != nil {
		if l, col, anchors, ok := findAlias(lines, m[1]); ok {
			if sug, found := suggest(m[1], anchors); found {
				return at(l, col, "alias *%s refers to no anchor; did you mean *%s?", m[1], sug)
			}
			return at(l, col, "alias *%s refers to no anchor: define &%s on a value above it in this document, or quote the value if * was meant as text", m[1], m[1])
		}
	}
	if line < 1 || line > len(lines) {
		line = max(1, min(line, len(lines)))
		return at(line, 1, "invalid YAML: %s", msg)
	}
	text := lines[line-1]
	value, valueCol, hasValue := plainValue(text)
	switch {
	case strings.Contains(msg, "tab character") || (strings.Contains(msg, "cannot start any token") && strings.HasPrefix(strings.TrimLeft(text, " "), "\t")):
		return at(line, 1+len(text)-len(strings.TrimLeft(text, " \t")), "invalid YAML: a tab in the indentation; indent with spaces")
	case strings.Contains(msg, "cannot start any token") && hasValue && value != "" && strings.ContainsRune("@`", rune(value[0])):
		return at(line, valueCol, "invalid YAML: a plain value cannot start with %c; quote it: %s", value[0], quoteSuggestion(value))
	case strings.Contains(msg, "did not find expected alphabetic or numeric character") && hasValue && strings.HasPrefix(value, "*"):
		return at(line, valueCol, "invalid YAML: a plain value starting with * is read as an alias; quote it: %s", quoteSuggestion(value))
	case strings.Contains(msg, "did not find expected alphabetic or numeric character") && hasValue && strings.HasPrefix(value, "&"):
		return at(line, valueCol, "invalid YAML: a plain value starting with & is read as an anchor; quote it: %s", quoteSuggestion(value))
	case strings.Contains(msg, "mapping values are not allowed"):
		if hasValue {
			if i := strings.Index(value, ": "); i >= 0 || strings.HasSuffix(value, ":") {
				if i < 0 {
					i = len(value) - 1
				}
				return at(line, valueCol+utf8.RuneCountInString(value[:i]), "invalid YAML: a plain value cannot contain \": \"; quote the whole value: %s", quoteSuggestion(value))
			}
		}
		if line > 1 && indentOf(text) > indentOf(lines[line-2]) {
			return at(line, 1+indentOf(text), "invalid YAML: this line is indented deeper than the line above, which already has a value; align it with the field it belongs next to")
		}
	case strings.Contains(msg, "unknown escape character"):
		if col, esc, ok := unknownEscape(text); ok {
			return at(line, col, "invalid YAML: \\%s is not an escape in double quotes; write \\\\%s for a backslash, or use single quotes, where a backslash is plain text", esc, esc)
		}
	}
	return at(line, 1, "invalid YAML: %s", msg)
}

// indentOf counts the leading spaces of a line.
func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// plainValue returns the value of a "key: value" or "- value" line, with its
// 1-based column, without a trailing comment.
func plainValue(text string) (string, int, bool) {
	start := indentOf(text)
	rest := text[start:]
	for strings.HasPrefix(rest, "- ") {
		start += 2
		rest = text[start:]
	}
	if i := keyColon(rest); i >= 0 {
		skip := i + 1
		for skip < len(rest) && rest[skip] == ' ' {
			skip++
		}
		start += skip
		rest = rest[skip:]
	} else if start == indentOf(text) {
		return "", 0, false
	}
	if i := strings.Index(rest, " #"); i >= 0 {
		rest = rest[:i]
	}
	return strings.TrimRight(rest, " \r"), 1 + utf8.RuneCountInString(text[:start]), true
}

// keyColon returns the index of the ": " that ends a plain key, or -1.
func keyColon(s string) int {
	if s == "" || strings.ContainsRune(`"'{[`, rune(s[0])) {
		return -1
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
			return i
		}
		if s[i] == ' ' && i+1 < len(s) && s[i+1] == '#' {
			return -1
		}
	}
	return -1
}

// quoteSuggestion shows a value in the quotes that keep it as written.
func quoteSuggestion(v string) string {
	if !strings.Contains(v, "'") {
		return "'" + v + "'"
	}
	return strconv.Quote(v)
}

// yamlEscapes are the characters that may follow a backslash in a
// double-quoted YAML string.
const yamlEscapes = "0abt\tnvfre \"/\\N_LPxuU"

// unknownEscape finds the first backslash escape YAML does not know in the
// double-quoted value of a line, with its 1-based column.
func unknownEscape(text string) (col int, esc string, ok bool) {
	in := false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case !in && c == '"':
			in = true
		case in && c == '"':
			in = false
		case in && c == '\\' && i+1 < len(text):
			if !strings.ContainsRune(yamlEscapes, rune(text[i+1])) {
				_, size := utf8.DecodeRuneInString(text[i+1:])
				return 1 + utf8.RuneCountInString(text[:i]), text[i+1 : i+1+size], true
			}
			i++
		}
	}
	return 0, "", false
}

// findQuoteMistake looks for a value that opens a quote and either never
// closes it or closes it and goes on: the parser reports both where the
// mapping starts, lines before the mistake (or after it, at the end of the
// file), so the whole file is searched.
func findQuoteMistake(lines []string) (line, col int, msg string, ok bool) {
	block := -1 // the indentation of a block scalar's field, while in one
	for i := range lines {
		if block >= 0 {
			if strings.TrimSpace(lines[i]) == "" || indentOf(lines[i]) > block {
				continue // block scalar text: quotes there are plain characters
			}
			block = -1
		}
		value, valueCol, has := plainValue(lines[i])
		if has && blockScalarRE.MatchString(value) {
			block = indentOf(lines[i])
			continue
		}
		if !has || value == "" || (value[0] != '"' && value[0] != '\'') {
			continue
		}
		q := value[0]
		end := closingQuote(value, q)
		switch {
		case end < 0 && !closedLater(lines[i+1:], q):
			return i + 1, valueCol, fmt.Sprintf("invalid YAML: the %s value opened here is never closed; add the closing %c at its end", quoteName(q), q), true
		case end > 0 && end+1 < len(value):
			other := byte('\'')
			inner := `\"`
			if q == '\'' {
				other, inner = '"', "''"
			}
			return i + 1, valueCol + utf8.RuneCountInString(value[:end+1]),
				fmt.Sprintf("invalid YAML: the %s value closes before the end of the line; to write %c inside it, write %s, or quote the whole value with %c", quoteName(q), q, inner, other), true
		}
	}
	return 0, 0, "", false
}

// blockScalarRE matches the header of a literal or folded block scalar.
var blockScalarRE = regexp.MustCompile(`^[|>][-+0-9]*$`)

// quoteName names a quote character.
func quoteName(q byte) string {
	if q == '"' {
		return "double-quoted"
	}
	return "single-quoted"
}

// closingQuote returns the index of the quote that closes the value opened
// by q at index 0, or -1 when it stays open.
func closingQuote(value string, q byte) int {
	for i := 1; i < len(value); i++ {
		switch {
		case q == '"' && value[i] == '\\':
			i++
		case value[i] == q && q == '\'' && i+1 < len(value) && value[i+1] == '\'':
			i++
		case value[i] == q:
			return i
		}
	}
	return -1
}

// closedLater reports whether a quoted value left open goes on over the next
// lines and closes there, as a multi-line quoted value may: it closes on a
// later line, and no line before that looks like a new field.
func closedLater(rest []string, q byte) bool {
	for _, l := range rest {
		if _, _, isField := plainValue(l); isField && keyColon(strings.TrimLeft(l, " -")) >= 0 && !strings.ContainsRune(l, rune(q)) {
			return false
		}
		if strings.ContainsRune(l, rune(q)) {
			return true
		}
	}
	return false
}

// unknownAnchorRE reads the parser's message about an alias to an anchor
// never defined, which it gives without a line.
var unknownAnchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// findAlias finds the first alias *name in the file that no anchor &name
// comes before (the one the parser stopped at), with its 1-based line and
// column, and the anchors defined above it. It skips comments, quoted text
// and block scalars.
func findAlias(lines []string, name string) (line, col int, anchors []string, ok bool) {
	block := -1 // the indentation of a block scalar's field, while in one
	for i, text := range lines {
		if block >= 0 {
			if strings.TrimSpace(text) == "" || indentOf(text) > block {
				continue
			}
			block = -1
		}
		var quote byte
		for j := 0; j < len(text); j++ {
			c := text[j]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
				continue
			case c == '\'' || c == '"':
				if j == 0 || strings.IndexByte(" \t[{,:-", text[j-1]) >= 0 {
					quote = c
				}
				continue
			case c == '#' && (j == 0 || text[j-1] == ' '):
				j = len(text)
				continue
			case c != '&' && c != '*':
				continue
			case j > 0 && strings.IndexByte(" \t[{,-", text[j-1]) < 0 && !(text[j-1] == ':' && c == '*'):
				continue
			}
			end := j + 1
			for end < len(text) && strings.IndexByte(" \t,[]{}", text[end]) < 0 {
				end++
			}
			switch word := text[j+1 : end]; {
			case c == '&':
				anchors = append(anchors, word)
			case word == name && !slices.Contains(anchors, name):
				return i + 1, 1 + utf8.RuneCountInString(text[:j]), anchors, true
			}
		}
		if v, _, has := plainValue(text); has && (strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">")) {
			block = indentOf(text)
		}
	}
	return 0, 0, nil, false
}
