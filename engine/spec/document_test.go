package spec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePositions(t *testing.T) {
	t.Parallel()
	docs, errs := parseSource(Source{Name: "p.yaml", Data: []byte(`kind: TaskType
name: t
handler:
  exec:
    command: ["a", "b"]
    env: {"a/b~c": x}
---
- 1
`)})
	require.Empty(t, errs)
	require.Len(t, docs, 2)
	d := docs[0]
	require.Equal(t, "TaskType", d.kind)
	require.Equal(t, "t", d.name)
	require.Equal(t, pos{1, 1}, d.pos)
	require.Equal(t, pos{5, 15}, d.at("/handler/exec/command/0"))
	require.Equal(t, pos{5, 20}, d.at("/handler/exec/command/1"))
	require.Equal(t, pos{5, 5}, d.keyAt("/handler/exec/command"))
	require.Equal(t, pos{6, 11}, d.keyAt("/handler/exec/env/a~1b~0c"))
	require.Equal(t, pos{6, 20}, d.at("/handler/exec/env/a~1b~0c"))
	require.Equal(t, pos{5, 14}, d.at("/handler/exec/command/9"), "falls back to the closest ancestor")
	require.Equal(t, `handler.exec.env["a/b~c"]`, fieldPath(d.value, "/handler/exec/env/a~1b~0c"))
	require.Equal(t, `handler.exec.command[1]`, fieldPath(d.value, "/handler/exec/command/1"))
	require.Equal(t, pos{8, 1}, docs[1].pos)
}

func TestParseMergeKeys(t *testing.T) {
	t.Parallel()
	docs, errs := parseSource(Source{Name: "m.yaml", Data: []byte(`
base: &base {a: 1, b: 2}
other: &other {b: 20, c: 30}
one:
  <<: *base
  b: 3
many:
  <<: [*base, *other]
  d: 4
`)})
	require.Empty(t, errs)
	m := docs[0].value.(map[string]any)
	require.Equal(t, map[string]any{"a": int64(1), "b": int64(3)}, m["one"])
	require.Equal(t, map[string]any{"a": int64(1), "b": int64(2), "c": int64(30), "d": int64(4)}, m["many"])
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ src, want string }{
		"BillionLaughs": {
			src:  billionLaughs(),
			want: "document too large: more than 100000 values once aliases are expanded",
		},
		"ManyDocuments": {
			src:  manyLaughs(),
			want: "file too large: more than 200000 values in its documents once aliases are expanded",
		},
		"TooDeep": {
			src:  strings.Repeat("[", 150) + strings.Repeat("]", 150),
			want: "document nested too deep: more than 100 levels",
		},
		"MergeOfScalar": {src: "a: &x 1\nb: {<<: *x}\n", want: "a merge key (<<) needs a mapping or a list of mappings"},
		"Infinity":      {src: "a: .inf\n", want: "number .inf has no JSON value"},
		"SetTag":        {src: "a: !!set {x}\n", want: "unsupported YAML tag !!set on a mapping"},
		"Syntax":        {src: "a: [1\n", want: "invalid YAML: did not find expected ',' or ']'"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, errs := parseSource(Source{Name: "x.yaml", Data: []byte(tc.src)})
			require.NotEmpty(t, errs)
			require.Contains(t, errs[0].Message, tc.want)
		})
	}
}

// billionLaughs builds the classic alias bomb: ten levels of ten aliases.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		prev := "*a" + string(rune('0'+i-1))
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n")
	}
	return b.String()
}

// manyLaughs builds a file of ten documents, each a bomb of some 66,000
// values: each is under the document limit, the file is not.
func manyLaughs() string {
	var b strings.Builder
	for range 10 {
		b.WriteString("---\na0: &a0 [x, x, x, x, x, x, x, x, x]\n")
		for i := 1; i < 5; i++ {
			prev := "*a" + string(rune('0'+i-1))
			b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(prev+", ", 8) + prev + "]\n")
		}
	}
	return b.String()
}

// TestParseSourceBudget checks that documents that spend the file's value
// budget exactly are kept, and that the first document past it is an error.
func TestParseSourceBudget(t *testing.T) {
	t.Parallel()
	// A list of n items is n+1 values: each document spends one document's
	// budget, two spend the file's.
	full := "--- [" + strings.Repeat("x, ", maxDocumentValues-2) + "x]\n"
	docs, errs := parseSource(Source{Name: "b.yaml", Data: []byte(full + full + "--- {kind: TaskType}\n")})
	require.Len(t, docs, 2)
	require.Len(t, errs, 1)
	require.Equal(t, "b.yaml:3:5: file too large: more than 200000 values in its documents once aliases are expanded", errs[0].String())
}

// TestParseEncodings: a file saved as UTF-16 is named as such; a file with a
// byte that is not UTF-8 is reported at that byte; a UTF-8 BOM is fine.
func TestParseEncodings(t *testing.T) {
	t.Parallel()
	utf16 := []byte{0xFF, 0xFE, 'k', 0, 'i', 0, 'n', 0, 'd', 0}
	_, errs := parseSource(Source{Name: "u.yaml", Data: utf16})
	require.Equal(t, Errors{{File: "u.yaml", Line: 1, Col: 1, Message: "the file is saved as UTF-16; save it as UTF-8"}}, errs)

	_, errs = parseSource(Source{Name: "l.yaml", Data: []byte("kind: TaskType\nname: \xe9t\xe9\n")})
	require.Len(t, errs, 1)
	require.Equal(t, pos{2, 7}, pos{errs[0].Line, errs[0].Col})
	require.Contains(t, errs[0].Message, "byte 0xE9")

	docs, errs := parseSource(Source{Name: "b.yaml", Data: []byte("\xef\xbb\xbfkind: TaskType\nname: ünï\n")})
	require.Empty(t, errs)
	require.Equal(t, "ünï", docs[0].name)
}

// TestPatternsOverlap covers the glob intersection behind the check of
// subscriptions that drop each other's tasks.
func TestPatternsOverlap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"a.b", "a.b", true},
		{"a.b", "a.c", false},
		{"catalog.*", "catalog.created", true},
		{"catalog.*", "*.created", true},
		{"catalog.*", "item.*", false},
		{"order.[a-m]*", "order.[n-z]*", false},
		{"order.[a-m]*", "order.[^a-c]*", true},
		{"x.?", "x.ab", false},
		{"x.??", "x.ab", true},
		{"a/*", "a/b/c", false},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{"*", "", true},
	} {
		require.Equal(t, tc.want, patternsOverlap(tc.a, tc.b), "%q and %q", tc.a, tc.b)
		require.Equal(t, tc.want, patternsOverlap(tc.b, tc.a), "%q and %q", tc.b, tc.a)
	}
}
