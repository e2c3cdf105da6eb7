package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/doctest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestWalkthroughs runs the walk-throughs of the README and of docs/ (the
// shell blocks marked doctest, see internal/doctest) as a reader would:
// each page in a fresh folder with bin/wf built from this checkout, on a
// fresh database of its own (WF_DATABASE_URL), its blocks in one shell
// session, comparing what each prints with the output the page shows. A
// walk-through that breaks fails make test.
func TestWalkthroughs(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"README.md"}, pages...)
	type page struct {
		name   string
		blocks []doctest.Block
	}
	var marked []page
	for _, name := range pages {
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := doctest.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(blocks) > 0 {
			marked = append(marked, page{name, blocks})
		}
	}
	if len(marked) == 0 {
		t.Fatal("no page marks a walk-through (```sh doctest): the README's first session must")
	}
	wf := filepath.Join(t.TempDir(), "wf")
	if out, err := exec.Command("go", "build", "-o", wf, ".").CombinedOutput(); err != nil {
		t.Fatalf("error building wf: %v\n%s", err, out)
	}
	for _, p := range marked {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(wf, filepath.Join(dir, "bin", "wf")); err != nil {
				t.Fatal(err)
			}
			// The reader's checkout: the shipped specs (copied: wf reads
			// no spec through a link) and, linked, the rest of the
			// repository's top level (a walk-through copies a test file
			// from catalog/…).
			if err := os.CopyFS(filepath.Join(dir, "specs"), os.DirFS("specs")); err != nil {
				t.Fatal(err)
			}
			linkCheckout(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			env := []string{
				"WF_DATABASE_URL=" + dbtest.NewDatabase(t),
				"WF_DATA_DIR=" + filepath.Join(dir, ".wf"),
				"PATH=" + filepath.Join(dir, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
				"HOME=" + dir,
				// Pages run side by side, each wf on a port of its own,
				// which a page reads from WF_LISTEN as a reader does.
				"WF_LISTEN=" + freeAddress(t),
			}
			results, err := doctest.Execute(ctx, dir, env, p.blocks)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range results {
				if r.Block.Kind != doctest.Run {
					continue
				}
				where := fmt.Sprintf("%s:%d", p.name, r.Block.Line)
				if !r.Ran {
					t.Errorf("%s: did not run: the session ended before it", where)
					continue
				}
				if r.Status != r.Block.WantStatus {
					t.Errorf("%s: ended with status %d, want %d; it printed:\n%s%s", where, r.Status, r.Block.WantStatus, r.Output, backgrounds(dir, results[:i]))
				}
				if r.Block.Output != nil {
					if ok, reason := doctest.Match(*r.Block.Output, r.Output); !ok {
						t.Errorf("%s: prints what the page does not show: %s; it printed:\n%s", where, reason, r.Output)
					}
				}
			}
		})
	}
}

// linkCheckout links the checkout's top-level entries into dir, but for
// what a walk-through makes or copies itself (bin, specs, .wf, wf.yaml)
// and git's own.
func linkCheckout(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case "bin", "specs", ".wf", "wf.yaml", ".git":
			continue
		}
		if err := os.Symlink(filepath.Join(repo, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// freeAddress returns a loopback address with a port free a moment ago.
func freeAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// backgrounds is what the background blocks before a failed one printed.
func backgrounds(dir string, before []doctest.Result) string {
	var s strings.Builder
	for i, r := range before {
		if r.Block.Kind == doctest.Background {
			fmt.Fprintf(&s, "\n-- background block at line %d printed:\n%s", r.Block.Line, doctest.BackgroundLog(dir, i))
		}
	}
	return s.String()
}
