package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The corpus (testdata/corpus) holds realistic spec mistakes and unusual but
// valid specs. Each broken fixture states what wf validate must say in
// comments of the form
//
//	# want LINE: PHRASE
//
// where LINE is the line of the mistake in that file and PHRASE a part of
// the message. A fixture is a file, or a folder whose files together make
// one set (each states its own wants). The test fails on a want no error
// meets (a missed case or a wrong line) and on an error no want expects (a
// false alarm, or a false second error after a first one).
//
// A line "# runtime: heartbeat_interval=40s visibility_timeout=1m" sets the
// configuration the fixture is checked against (Options.Runtime).

// wantRE reads a want comment.
var wantRE = regexp.MustCompile(`(?m)^[ \t]*# want (\d+): (.+?)\r?$`)

// runtimeRE reads a runtime comment.
var runtimeRE = regexp.MustCompile(`(?m)^[ \t]*# runtime: (.+?)\r?$`)

// want is one expected error.
type want struct {
	file   string
	line   int
	phrase string
}

// forEachCorpusFixture runs check, as forEachFixture does, on each corpus
// fixture under dir with the options and the wants it states.
func forEachCorpusFixture(t *testing.T, dir string, atLeast int, check func(t *testing.T, path string, opts Options, wants []want)) {
	t.Helper()
	forEachFixture(t, dir, atLeast, func(t *testing.T, _, path string) {
		opts, wants := corpusFixture(t, path)
		check(t, path, opts, wants)
	})
}

// corpusFixture reads a fixture's files, its wants and its options.
func corpusFixture(t *testing.T, path string) (opts Options, wants []want) {
	t.Helper()
	opts = testOptions()
	var files []string
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		sources, err := ReadSources(path)
		require.NoError(t, err)
		for _, s := range sources {
			files = append(files, s.Name)
		}
	} else {
		files = []string{path}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range wantRE.FindAllSubmatch(data, -1) {
			line, err := strconv.Atoi(string(m[1]))
			require.NoError(t, err)
			wants = append(wants, want{file: f, line: line, phrase: string(m[2])})
		}
		for _, m := range runtimeRE.FindAllSubmatch(data, -1) {
			opts.Runtime = parseRuntime(t, string(m[1]))
		}
	}
	return opts, wants
}

// parseRuntime reads "key=duration ..." into a Runtime.
func parseRuntime(t *testing.T, text string) *Runtime {
	t.Helper()
	rt := testRuntime()
	for _, kv := range strings.Fields(text) {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, "runtime setting %q", kv)
		d, err := time.ParseDuration(v)
		require.NoError(t, err)
		switch k {
		case "heartbeat_interval":
			rt.HeartbeatInterval = d
		case "visibility_timeout":
			rt.VisibilityTimeout = d
		default:
			t.Fatalf("unknown runtime setting %q", k)
		}
	}
	return rt
}

func TestCorpusBroken(t *testing.T) {
	t.Parallel()
	forEachCorpusFixture(t, "testdata/corpus/broken", 60, func(t *testing.T, path string, opts Options, wants []want) {
		require.NotEmpty(t, wants, "a broken fixture states what it wants: # want LINE: PHRASE")
		errs := loadErrors(t, opts, path)
		var problems []string
		met := make([]bool, len(errs))
		for _, w := range wants {
			found := false
			for i, e := range errs {
				if e.File == w.file && e.Line == w.line && strings.Contains(e.Message, w.phrase) {
					found, met[i] = true, true
				}
			}
			if !found {
				problems = append(problems, fmt.Sprintf("missed: %s:%d: …%s…", w.file, w.line, w.phrase))
			}
		}
		for i, e := range errs {
			if !met[i] {
				problems = append(problems, "unexpected: "+e.String())
			}
		}
		require.Empty(t, problems, "all errors:\n%s", errs.Error())
	})
}

func TestCorpusValid(t *testing.T) {
	t.Parallel()
	forEachCorpusFixture(t, "testdata/corpus/valid", 15, func(t *testing.T, path string, opts Options, wants []want) {
		require.Empty(t, wants, "a valid fixture wants no error")
		_, err := Load(opts, path)
		require.NoError(t, err, "wf validate rejected a valid spec")
	})
}

// TestCorpusFixtureNames keeps the corpus readable: one folder per outcome,
// YAML files only, each named for what it shows.
func TestCorpusFixtureNames(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"testdata/corpus/broken", "testdata/corpus/valid"} {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			require.True(t, e.IsDir() || isSpecFile(e.Name()), "%s: not a spec fixture", filepath.Join(dir, e.Name()))
		}
	}
}
