package geom

import (
	"bufio"
	"io"
)

// NonFiniteReader returns a reader of r's JSON text in which the bare words
// NaN, Infinity and -Infinity (which Python's json module and others write
// for non-finite floats, and which JSON does not allow) are quoted, so
// "coordinates": [NaN, 1] reads as ["NaN", 1]: the document stays
// well-formed and ParseGeoJSON turns the strings back into the non-finite
// numbers that Validate rejects, for that one record. Any other bare word
// outside a string is quoted likewise (only true, false and null are left
// alone), which turns a typo into a string rather than a syntax error that
// would end a whole stream. Text inside strings is never touched. The
// reader streams: it holds a fixed-size buffer, whatever r's length.
func NonFiniteReader(r io.Reader) io.Reader {
	return &nonFiniteReader{r: bufio.NewReaderSize(r, 64<<10)}
}

type nonFiniteReader struct {
	r        *bufio.Reader
	out      []byte // transformed bytes not yet returned
	inString bool
	escaped  bool
	inWord   bool // inside a bare word being quoted
	word     []byte
	minus    bool // a '-' outside a string is held back
	err      error
}

// Read implements io.Reader.
func (n *nonFiniteReader) Read(p []byte) (int, error) {
	for len(n.out) == 0 && n.err == nil {
		n.fill()
	}
	if len(n.out) > 0 {
		c := copy(p, n.out)
		n.out = n.out[c:]
		return c, nil
	}
	return 0, n.err
}

// fill transforms the next chunk of input into n.out.
func (n *nonFiniteReader) fill() {
	chunk, _ := n.r.Peek(n.r.Buffered())
	if len(chunk) == 0 {
		if _, err := n.r.Peek(1); err != nil {
			n.finish(err)
			return
		}
		chunk, _ = n.r.Peek(n.r.Buffered())
	}
	out := n.out[:0]
	for _, c := range chunk {
		out = n.step(out, c)
	}
	_, _ = n.r.Discard(len(chunk))
	n.out = out
}

// finish flushes what is held back at the end of the input.
func (n *nonFiniteReader) finish(err error) {
	out := n.out[:0]
	if n.minus {
		out = append(out, '-')
		n.minus = false
	}
	if n.inWord {
		out = n.endWord(out)
	}
	n.out, n.err = out, err
}

// isLetter reports whether c may be part of a bare word.
func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// step transforms one input byte.
func (n *nonFiniteReader) step(out []byte, c byte) []byte {
	switch {
	case n.inString:
		switch {
		case n.escaped:
			n.escaped = false
		case c == '\\':
			n.escaped = true
		case c == '"':
			n.inString = false
		}
		return append(out, c)
	case n.inWord:
		if isLetter(c) {
			n.word = append(n.word, c)
			return out
		}
		out = n.endWord(out)
		return n.step(out, c)
	case n.minus:
		n.minus = false
		if isLetter(c) {
			n.inWord, n.word = true, append(n.word[:0], '-', c)
			return out
		}
		out = append(out, '-')
		return n.step(out, c)
	case c == '"':
		n.inString = true
		return append(out, c)
	case c == '-':
		n.minus = true
		return out
	case isLetter(c) && c != 'e' && c != 'E':
		// Exponent markers belong to numbers; every other bare word starts
		// with a letter that no number contains.
		n.inWord, n.word = true, append(n.word[:0], c)
		return out
	}
	return append(out, c)
}

// endWord writes a finished bare word: true, false and null as they are,
// anything else quoted.
func (n *nonFiniteReader) endWord(out []byte) []byte {
	n.inWord = false
	switch string(n.word) {
	case "true", "false", "null":
		return append(out, n.word...)
	}
	out = append(out, '"')
	out = append(out, n.word...)
	return append(out, '"')
}
