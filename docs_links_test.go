package main

import (
	"fmt"
	"iter"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocsLinksResolve checks that every relative link and image of
// README.md and docs/*.md names a file of the repository, and that every
// #anchor names a heading of the page it points into (as GitHub makes
// anchors: lowercase, punctuation dropped, spaces to '-'), so that a
// section moved from one page to another leaves no link behind; and that
// the README links every page of docs/, so that none is out of a
// newcomer's reach.
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"README.md"}, pages...)
	anchors := map[string]map[string]bool{} // page → its anchors, read once
	anchorsOf := func(page string) (map[string]bool, error) {
		if a, ok := anchors[page]; ok {
			return a, nil
		}
		text, err := os.ReadFile(page)
		if err != nil {
			return nil, err
		}
		anchors[page] = headingAnchors(string(text))
		return anchors[page], nil
	}
	checked := 0
	fromReadme := map[string]bool{}
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(text)) {
			checked++
			target, anchor, _ := strings.Cut(l.target, "#")
			file := page
			if target != "" {
				file = path.Join(path.Dir(page), target)
				if page == "README.md" {
					fromReadme[file] = true
				}
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", page, l.line, l.target, file)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", page, l.line, l.target)
				continue
			}
			a, err := anchorsOf(file)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", page, l.line, l.target, err)
				continue
			}
			if !a[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading whose anchor is #%s", page, l.line, l.target, file, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no link found in README.md and docs/*.md")
	}
	for _, page := range pages[1:] {
		if !fromReadme[page] {
			t.Errorf("README.md does not link %s (add it to \"Where to go next\" with a line on what it holds)", page)
		}
	}
}

type markdownLink struct {
	line   int
	target string
}

// linkRE matches an inline link or image, [text](target) or
// [text](target "title"), and the src of an HTML <img>.
var linkRE = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|<img[^>]*\ssrc="([^"]+)"`)

// schemeRE matches a link with a scheme: https:, mailto:, ….
var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// markdownLinks lists the relative links of a Markdown text outside its
// fenced code blocks and code spans: not those with a scheme (https:,
// mailto:) nor those starting at the site's root.
func markdownLinks(text string) []markdownLink {
	var links []markdownLink
	for i, line := range proseLines(text) {
		for _, m := range linkRE.FindAllStringSubmatch(stripCodeSpans(line), -1) {
			target := m[1] + m[2]
			if target == "" || strings.HasPrefix(target, "/") || schemeRE.MatchString(target) {
				continue
			}
			links = append(links, markdownLink{line: i, target: target})
		}
	}
	return links
}

// proseLines returns the lines of a Markdown text outside its fenced code
// blocks, by line number (1-based), in order.
func proseLines(text string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		fence := ""
		for i, line := range strings.Split(text, "\n") {
			trimmed := strings.TrimLeft(line, " ")
			switch {
			case fence != "":
				if strings.HasPrefix(trimmed, fence) {
					fence = ""
				}
			case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
				fence = trimmed[:3]
			default:
				if !yield(i+1, line) {
					return
				}
			}
		}
	}
}

// stripCodeSpans blanks the code spans of a line: a run of backticks up to
// the next run of the same length.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		ticks := line[i : i+n]
		end := -1
		for j := i + n; j < len(line); {
			k := strings.Index(line[j:], ticks)
			if k < 0 {
				break
			}
			k += j
			m := 0
			for k+m < len(line) && line[k+m] == '`' {
				m++
			}
			if m == n {
				end = k
				break
			}
			j = k + m
		}
		if end < 0 { // no closing run: the backticks are text
			b.WriteString(ticks)
			i += n
			continue
		}
		b.WriteString(strings.Repeat(" ", end+n-i))
		i = end + n
	}
	return b.String()
}

// headingLinkRE matches a link or image in a heading; its label stays.
var headingLinkRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// headingAnchors lists the anchors GitHub gives the ATX headings of a
// Markdown text: the heading's text without its Markdown (code spans keep
// their text, links their label), lowercased, letters, digits, spaces,
// '-' and '_' kept and spaces made '-'; a repeated anchor gets -1, -2, ….
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(text) {
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[level:]), "#"))
		heading = headingLinkRE.ReplaceAllString(heading, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor = fmt.Sprintf("%s-%d", anchor, n)
		} else {
			seen[anchor] = 1
		}
		anchors[anchor] = true
	}
	return anchors
}
