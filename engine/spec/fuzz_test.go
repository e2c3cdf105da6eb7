package spec

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
