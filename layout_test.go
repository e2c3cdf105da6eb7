package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestLayoutNamesEveryPackage checks that the Layout table of
// docs/architecture.md names every Go package of the repository (a folder
// holding a non-test .go file), so that a newcomer finds each package's one
// job there. A row may
// name several packages of one folder: "`runners/builtin`, `exec`, `http`"
// names runners/builtin, runners/exec and runners/http.
func TestLayoutNamesEveryPackage(t *testing.T) {
	architecture, err := os.ReadFile(layoutPage)
	if err != nil {
		t.Fatal(err)
	}
	named := layoutNames(t, string(architecture))
	var missing []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if dir == "." || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if !named[dir] && !slices.Contains(missing, dir) {
			missing = append(missing, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("%s's Layout table does not name these packages (add a row with each one's job): %s",
			layoutPage, strings.Join(missing, ", "))
	}
}

// layoutPage is the documentation page that holds the Layout table.
const layoutPage = "docs/architecture.md"

// layoutNames reads the package names of the first cells of the Layout
// table's rows.
func layoutNames(t *testing.T, page string) map[string]bool {
	t.Helper()
	_, section, ok := strings.Cut(page, "\n## Layout\n")
	if !ok {
		t.Fatalf(`%s has no "## Layout" section`, layoutPage)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	named := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.Split(line, "|")[1]
		parent := ""
		for i, m := range quoted.FindAllStringSubmatch(cell, -1) {
			name := strings.TrimSuffix(m[1], "/")
			if i == 0 {
				parent = filepath.ToSlash(filepath.Dir(name))
			} else if !strings.Contains(name, "/") && parent != "." {
				name = parent + "/" + name
			}
			named[name] = true
		}
	}
	if len(named) == 0 {
		t.Fatalf("%s's Layout table names no package", layoutPage)
	}
	return named
}
