package spec

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzLoad checks that no input makes Compile panic, and that every error it
// reports is placed in the file.
func FuzzLoad(f *testing.F) {
	for _, root := range []string{"testdata", "../../specs"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !isSpecFile(path) {
				return err
			}
			data, err := os.ReadFile(path)
			if err == nil {
				f.Add(data)
			}
			return err
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	for _, src := range inlineSpecs(f) {
		f.Add([]byte(src))
	}
	compiler, err := NewCompiler(testOptions())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := compiler.Compile([]Source{{Name: "fuzz.yaml", Data: data}})
		if err == nil {
			if _, err := json.Marshal(set); err != nil {
				t.Fatalf("a valid set does not encode: %v", err)
			}
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("want spec.Errors, got %T: %v", err, err)
		}
		for _, e := range errs {
			if e.File != "fuzz.yaml" || e.Line < 1 || e.Col < 1 || e.Message == "" || strings.Contains(e.Message, "\n") {
				t.Fatalf("badly placed error: %q", e.String())
			}
		}
	})
}

// FuzzEvaluate checks that no event makes a subscription's evaluation panic,
// whatever its type, tenant and payload (the event consumer evaluates what
// POST /events accepted): it gives a task, nothing, or an error.
func FuzzEvaluate(f *testing.F) {
	var subs []*Subscription
	for _, path := range []string{"../../specs", "testdata/valid/all_kinds.yaml", "testdata/valid/defaults.yaml"} {
		sources, err := ReadSources(path)
		if err != nil {
			f.Fatal(err)
		}
		set, err := Compile(sources, Options{Builtins: allBuiltins(f, sources)})
		if err != nil {
			f.Fatal(err)
		}
		subs = append(subs, set.Subscriptions()...)
	}
	for _, s := range subs {
		typ := strings.ReplaceAll(s.EventType(), "*", "deleted")
		f.Add(typ, "CATALOG", "s_cat_a", []byte(`{"catalog_id": "cat-a", "collection_id": "regions", "schema_name": "s_cat_a", "hard": true}`))
		f.Add(typ, "", "system", []byte(`{"url": "https://example.com/hook", "n": 1e300, "nested": {"a": [1, null]}}`))
		f.Add(typ, "PLATFORM", "", []byte(`null`))
	}
	f.Fuzz(func(t *testing.T, eventType, scope, schemaName string, payload []byte) {
		event := map[string]any{
			"event_id": "0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d", "event_type": eventType, "scope": scope,
			"schema_name": schemaName, "payload": json.RawMessage(payload), "created_at": "2026-01-02T03:04:05Z",
		}
		for _, s := range subs {
			task, ok, err := s.Evaluate(event)
			switch {
			case err != nil:
				if err.Error() == "" {
					t.Fatalf("subscription %s: empty error", s.Name())
				}
			case ok:
				if task.SchemaName == "" || task.TaskType == "" {
					t.Fatalf("subscription %s: task %+v", s.Name(), task)
				}
				if _, err := json.Marshal(task.Inputs); err != nil {
					t.Fatalf("subscription %s: inputs %v do not encode: %v", s.Name(), task.Inputs, err)
				}
			}
		}
	})
}

// inlineSpecs returns the spec files written inline in this package's
// tests: every string literal of a _test.go file that declares a kind.
func inlineSpecs(f *testing.F) []string {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		f.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, name := range files {
		file, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			f.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(s, "kind: ") {
					out = append(out, s)
				}
			}
			return true
		})
	}
	return out
}

// FuzzExpression checks that compiling an expression against any of the
// environments never panics, whatever its text.
func FuzzExpression(f *testing.F) {
	for _, s := range []string{
		`event.payload.hard == true`, `"evt:" + event.event_id + ":" + task_type`, `inputs.path`,
		`schema_name + ":" + string(inputs.path)`, `len(inputs) > 2 ? "a" : ""`, `event.created_at.Year()`,
		`map(event.payload.items, #.id)`, `1 +`, `((`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, source string) {
		for _, env := range []any{taskEnv{}, eventEnv{}, eventDedupEnv{}} {
			for _, kind := range []resultKind{resultAny, resultString, resultBool} {
				_, _ = compileProgram(source, env, kind)
			}
		}
	})
}
