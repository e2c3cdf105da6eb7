// Package doctest reads the walk-throughs of wf's Markdown documentation so
// that a test can run them: the fenced shell blocks marked `doctest`, each
// with the output it shows, if any.
//
// A walk-through marks its blocks in the fence's info string, after the
// language, so that they render as usual:
//
//		```sh doctest
//		./bin/wf enqueue --wait noop
//		```
//		```text doctest-output
//		created task … (noop, PENDING)
//		task … COMPLETED
//		```
//
//	  - `doctest`: the block runs, in order with the page's other blocks, in
//	    one shell session (variables and the working folder carry over); its
//	    last command must succeed, or end with the status `exit=N` names
//	    (`sh doctest exit=1`).
//	  - `doctest-background`: the block runs in the background (a daemon, as
//	    `make run` in terminal 1) until the page's last block has run, or
//	    until a block marked `stop-background` (`sh doctest
//	    stop-background`), which first stops every background block started
//	    so far, as a reader presses Ctrl-C in terminal 1 before going on
//	    (the next section starts a daemon of its own).
//	  - `doctest-output`, right after a `doctest` block: what that block
//	    prints (standard output and error together). A line `...` stands for
//	    any number of lines, and `…` within a line for any text.
package doctest

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Kind is what a marked block is for.
type Kind int

// The kinds of marked blocks.
const (
	Run Kind = iota + 1
	Background
)

// Block is one marked shell block of a page.
type Block struct {
	Kind Kind
	// Line is the line of the opening fence (1-based).
	Line int
	// Script is the block's text.
	Script string
	// WantStatus is the exit status its last command must end with.
	WantStatus int
	// Output is the output it must print (Match), when the page shows it.
	Output *string
	// StopBackground stops the background blocks started before this
	// block, before it runs.
	StopBackground bool
}

// Parse returns the marked blocks of a Markdown page in order, or an error
// naming the line of a malformed marker (an output block that follows no
// doctest block, an exit status that is not a number, a fence left open).
func Parse(page []byte) ([]Block, error) {
	var (
		out     []Block
		inFence bool
		fence   string
		info    []string
		start   int
		body    strings.Builder
		// last is the index of the block an output block may follow: the
		// block just closed, when it was a doctest block.
		last = -1
	)
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if !inFence {
			if strings.HasPrefix(trimmed, "```") {
				inFence, fence, start = true, trimmed[:strings.LastIndex(trimmed, "`")+1], n
				info = strings.Fields(strings.TrimLeft(trimmed, "`"))
				body.Reset()
				continue
			}
			if strings.TrimSpace(line) != "" {
				last = -1
			}
			continue
		}
		if strings.TrimSpace(trimmed) != fence {
			body.WriteString(line)
			body.WriteByte('\n')
			continue
		}
		inFence = false
		b, isOutput, err := marked(info, start)
		if err != nil {
			return nil, err
		}
		switch {
		case isOutput:
			if last < 0 {
				return nil, fmt.Errorf("line %d: a doctest-output block must follow a doctest block", start)
			}
			text := body.String()
			out[last].Output = &text
			last = -1
		case b != nil:
			b.Script = body.String()
			out = append(out, *b)
			last = -1
			if b.Kind == Run {
				last = len(out) - 1
			}
		default:
			last = -1
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("error reading the page: %w", err)
	}
	if inFence {
		return nil, fmt.Errorf("line %d: the fence is never closed", start)
	}
	return out, nil
}

// marked reads a fence's info string: the block it marks (nil for none),
// or whether it is an output block.
func marked(info []string, line int) (*Block, bool, error) {
	if len(info) < 2 {
		return nil, false, nil
	}
	var b *Block
	isOutput := false
	for _, word := range info[1:] {
		switch {
		case word == "doctest":
			b = &Block{Kind: Run, Line: line}
		case word == "doctest-background":
			b = &Block{Kind: Background, Line: line}
		case word == "doctest-output":
			isOutput = true
		case word == "stop-background":
			if b == nil || b.Kind != Run {
				return nil, false, fmt.Errorf("line %d: stop-background follows doctest", line)
			}
			b.StopBackground = true
		case strings.HasPrefix(word, "exit="):
			code, err := strconv.Atoi(strings.TrimPrefix(word, "exit="))
			if err != nil || b == nil || b.Kind != Run {
				return nil, false, fmt.Errorf("line %d: %q: exit=N follows doctest and N is a number", line, word)
			}
			b.WantStatus = code
		}
	}
	if b != nil && isOutput {
		return nil, false, fmt.Errorf("line %d: a block is either run or shown as output, not both", line)
	}
	return b, isOutput, nil
}

// Match reports whether got is what want shows: line by line, trailing
// spaces ignored, a line "..." standing for any number of lines and "…"
// within a line for any text. When it does not match, the reason names the
// first line of want that was not found.
func Match(want, got string) (ok bool, reason string) {
	wl, gl := lines(want), lines(got)
	if matchFrom(wl, gl) {
		return true, ""
	}
	// Name the longest prefix of want that matches some prefix of got.
	for i := len(wl) - 1; i >= 0; i-- {
		for j := len(gl); j >= 0; j-- {
			if matchFrom(wl[:i], gl[:j]) {
				return false, fmt.Sprintf("want line %d %q not found after the %d lines matched so far", i+1, wl[i], j)
			}
		}
	}
	return false, fmt.Sprintf("want line 1 %q not found", wl[0])
}

// matchFrom matches want against got whole.
func matchFrom(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for k := 0; k <= len(got); k++ {
			if matchFrom(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(want[0], got[0]) && matchFrom(want[1:], got[1:])
}

// lineMatches matches one line, "…" standing for any text.
func lineMatches(want, got string) bool {
	if !strings.Contains(want, "…") {
		return want == got
	}
	parts := strings.Split(want, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

// lines splits text into lines without trailing spaces, dropping the
// trailing empty lines.
func lines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		out = append(out, strings.TrimRight(l, " \t\r"))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
