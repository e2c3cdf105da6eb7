package main

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// The date sweep of make test runs only the tests that write rows at times
// they compute, found by what they call (findDatedTests), not by a list kept
// by hand. A test is dated when it reaches, through the functions it names
// (calls or passes as values, in its package or in any package of the
// module), one of these roots:
//
//   - a function whose doc comment carries the directive datedDirective
//     (seeds and history inserts of the store: SeedOverviewTasks,
//     InsertFinishedTasks, EnsurePartitionsSpan);
//   - a function of a _test.go file that ensures partitions itself
//     (datedCalls): a test only does that to write at a date other than
//     today's;
//   - a function of a _test.go file whose SQL moves a time by an interval
//     from now() (datedSQL): a backdated or postdated row;
//   - a function or constant of any file whose SQL inserts into a
//     partitioned table at a time computed from now() (datedInsertSQL).
//
// The analysis type-checks the module (go/packages): a call through an
// interface method stands for every method of the module of that name, so
// it selects too much rather than too little.

// datedDirective marks a function that writes rows at times computed from
// its arguments.
const datedDirective = "//wf:dated"

// datedCalls are the names whose use in a _test.go file makes the using
// function a root.
var datedCalls = []string{"EnsurePartitions", "EnsurePartitionsSpan", "EnsurePartitionsWithin", "EnsureMonth"}

// datedSQL matches SQL that computes a time from now() with an interval.
var datedSQL = regexp.MustCompile(`(?i)now\(\)\s*[-+]\s*(interval|make_interval|\$\d|\(?\s*\$\d)`)

// datedInsertSQL matches an insert into a month-partitioned table that
// computes a time from now().
var datedInsertSQL = regexp.MustCompile(`(?is)INSERT\s+INTO\s+tasks\.(tasks|events)\b.*now\(\)\s*[-+]`)

// selection is a package of dated tests and the -test.run pattern that
// runs them.
type selection struct {
	importPath string
	dir        string
	tests      []string
}

// runPattern is the -test.run pattern of the selection's tests.
func (s selection) runPattern() string {
	quoted := make([]string, len(s.tests))
	for i, t := range s.tests {
		quoted[i] = regexp.QuoteMeta(t)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

// funcKey names a function or package-level variable for the analysis:
// types.Func.FullName for a function or method ("pkg.F", "(*pkg.T).M"),
// "var pkg.V" for a variable (whose initialiser may name functions),
// "method M" for a call through an interface method named M (it stands for
// every method of the module of that name).
type funcKey string

// graph is the module's reference graph: who names whom.
type graph struct {
	refs  map[funcKey][]funcKey
	roots map[funcKey]bool
	// tests are the Test functions of each package, by import path.
	tests map[string][]testFunc
}

// testFunc is one TestXxx function.
type testFunc struct {
	name string
	key  funcKey
}

// findDatedTests loads the packages of the module in dir ("" for the
// working folder's) with their tests (go/packages, type-checked) and
// returns, for each package matched by patterns that has dated tests,
// those tests.
func findDatedTests(ctx context.Context, dir string, patterns []string) ([]selection, error) {
	root, err := moduleRoot(ctx, dir)
	if err != nil {
		return nil, err
	}
	cfg := &packages.Config{
		Context: ctx,
		Dir:     root,
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedModule,
		Tests:   true,
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, fmt.Errorf("error loading the module's packages: %w", err)
	}
	var problems []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			problems = append(problems, e.Error())
		}
	})
	if len(problems) > 0 {
		return nil, fmt.Errorf("error loading the module's packages: %s", strings.Join(problems, "; "))
	}
	wanted, err := listImportPaths(ctx, dir, patterns)
	if err != nil {
		return nil, err
	}
	g := buildGraph(pkgs)
	dated := g.reach()
	var out []selection
	for path, dir := range wanted {
		var names []string
		for _, tf := range g.tests[path] {
			if dated[tf.key] {
				names = append(names, tf.name)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			names = slices.Compact(names)
			out = append(out, selection{importPath: path, dir: dir, tests: names})
		}
	}
	slices.SortFunc(out, func(a, b selection) int { return strings.Compare(a.importPath, b.importPath) })
	return out, nil
}

// moduleRoot is the folder of the go.mod of the module in dir.
func moduleRoot(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("error finding the module's go.mod (go env GOMOD): %v", err)
	}
	return filepath.Dir(gomod), nil
}

// listImportPaths asks go list, in dir, for the packages of patterns:
// import path to folder.
func listImportPaths(ctx context.Context, dir string, patterns []string) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}"}, patterns...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return nil, fmt.Errorf("error listing the packages %s: %w: %s", strings.Join(patterns, " "), err, exitErr.Stderr)
		}
		return nil, fmt.Errorf("error listing the packages %s: %w", strings.Join(patterns, " "), err)
	}
	paths := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, dir, ok := strings.Cut(line, "\t"); ok {
			paths[path] = dir
		}
	}
	return paths, nil
}

// buildGraph records, for each function and package-level variable of the
// packages, the functions and variables it names. A package's test variant
// adds its _test.go files; the plain variant gives the others once.
func buildGraph(pkgs []*packages.Package) *graph {
	g := &graph{refs: map[funcKey][]funcKey{}, roots: map[funcKey]bool{}, tests: map[string][]testFunc{}}
	methods := map[string][]funcKey{} // concrete methods by name
	for _, p := range pkgs {
		if strings.HasSuffix(p.PkgPath, ".test") || p.TypesInfo == nil {
			continue // the generated test main
		}
		testVariant := p.ID != p.PkgPath
		for _, f := range p.Syntax {
			path := p.Fset.Position(f.Pos()).Filename
			isTestFile := strings.HasSuffix(path, "_test.go")
			if testVariant && !isTestFile {
				continue
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					fn, ok := p.TypesInfo.Defs[d.Name].(*types.Func)
					if !ok || d.Body == nil {
						continue
					}
					key := funcKey(fn.FullName())
					if d.Recv != nil {
						methods[fn.Name()] = append(methods[fn.Name()], key)
					}
					g.refs[key] = append(g.refs[key], references(d.Body, p.TypesInfo)...)
					if hasDirective(d.Doc) || usesDated(d.Body, isTestFile) {
						g.roots[key] = true
					}
					if isTestFile && d.Recv == nil && isTest(d) {
						pkgPath := strings.TrimSuffix(p.PkgPath, "_test")
						g.tests[pkgPath] = append(g.tests[pkgPath], testFunc{name: d.Name.Name, key: key})
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						vs, ok := spec.(*ast.ValueSpec)
						if !ok {
							continue
						}
						for _, n := range vs.Names {
							key := funcKey("var " + p.PkgPath + "." + n.Name)
							for _, v := range vs.Values {
								g.refs[key] = append(g.refs[key], references(v, p.TypesInfo)...)
								if holdsDatedSQL(v, isTestFile) {
									g.roots[key] = true
								}
							}
						}
					}
				}
			}
		}
	}
	for name, impls := range methods {
		g.refs[funcKey("method "+name)] = impls
	}
	return g
}

// reach returns every key from which a root can be reached.
func (g *graph) reach() map[funcKey]bool {
	users := map[funcKey][]funcKey{}
	for from, tos := range g.refs {
		for _, to := range tos {
			users[to] = append(users[to], from)
		}
	}
	dated := map[funcKey]bool{}
	var queue []funcKey
	for k := range g.roots {
		dated[k] = true
		queue = append(queue, k)
	}
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		for _, u := range users[k] {
			if !dated[u] {
				dated[u] = true
				queue = append(queue, u)
			}
		}
	}
	return dated
}

// references lists the functions and package-level variables n names
// (calls or values): a function or concrete method by its full name, an
// interface method as every module method of its name. A function stored
// as a field of a composite literal is not followed: that is a dispatch
// table (a CLI's commands, a router's handlers), through which every test
// that runs the program would reach every command.
func references(n ast.Node, info *types.Info) []funcKey {
	var out []funcKey
	ast.Inspect(n, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if _, isFunc := info.Types[kv.Value].Type.(*types.Signature); isFunc {
				return false
			}
		}
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		switch obj := info.Uses[id].(type) {
		case *types.Func:
			obj = obj.Origin()
			if sig, ok := obj.Type().(*types.Signature); ok && sig.Recv() != nil && types.IsInterface(sig.Recv().Type()) {
				out = append(out, funcKey("method "+obj.Name()))
			} else {
				out = append(out, funcKey(obj.FullName()))
			}
		case *types.Var, *types.Const:
			if o := obj.(types.Object); o.Pkg() != nil && o.Parent() == o.Pkg().Scope() {
				out = append(out, funcKey("var "+o.Pkg().Path()+"."+o.Name()))
			}
		}
		return true
	})
	return out
}

// hasDirective reports whether a doc comment carries datedDirective.
func hasDirective(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if strings.TrimSpace(c.Text) == datedDirective {
			return true
		}
	}
	return false
}

// usesDated reports whether body makes its function a root: in a test file,
// it names one of datedCalls; in any file, it holds dated SQL
// (holdsDatedSQL).
func usesDated(body *ast.BlockStmt, testFile bool) bool {
	found := false
	if testFile {
		ast.Inspect(body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && slices.Contains(datedCalls, sel.Sel.Name) {
				found = true
			}
			return !found
		})
	}
	return found || holdsDatedSQL(body, testFile)
}

// holdsDatedSQL reports whether a string literal under n is dated SQL: one
// that moves a time from now() (datedSQL) in a test file, an insert at a
// time computed from now() (datedInsertSQL) in any file.
func holdsDatedSQL(n ast.Node, testFile bool) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			found = datedInsertSQL.MatchString(lit.Value) || (testFile && datedSQL.MatchString(lit.Value))
		}
		return !found
	})
	return found
}

// isTest reports whether d is a TestXxx(t *testing.T) function.
func isTest(d *ast.FuncDecl) bool {
	name := d.Name.Name
	if !strings.HasPrefix(name, "Test") || name == "TestMain" {
		return false
	}
	if rest := name[len("Test"):]; rest != "" && !(rest[0] < 'a' || rest[0] > 'z') {
		return false
	}
	params := d.Type.Params.List
	return len(params) == 1 && len(params[0].Names) <= 1
}
