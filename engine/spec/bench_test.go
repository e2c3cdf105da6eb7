package spec

import (
	"maps"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/wfhq/wf/wftype"
)

// Benchmarks of the spec hot paths: compiling the shipped specs (wf run,
// wf validate) and evaluating expressions (a dedup key per enqueued task, a
// subscription per consumed event). Run with
//
//	go test -run '^$' -bench . ./engine/spec/

var benchBuiltins = []string{"noop", "sleep", "fail"}

// BenchmarkCompileSpecs compiles the spec files of specs/ with a compiler
// made once (the spec schemas compiled), as a watch loop or tests would.
func BenchmarkCompileSpecs(b *testing.B) {
	sources, err := ReadSources("../../specs")
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewCompiler(Options{Builtins: allBuiltins(b, sources)})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Compile(sources); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadSpecs is Load of specs/ from nothing: reading the files,
// compiling the spec schemas, then the specs (what `wf run` does once).
func BenchmarkLoadSpecs(b *testing.B) {
	sources, err := ReadSources("../../specs")
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Builtins: allBuiltins(b, sources)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(opts, "../../specs"); err != nil {
			b.Fatal(err)
		}
	}
}

// allBuiltins names the builtin handlers the sources use (the CLI registers
// more than package builtin's defaults), so the benchmark compiles the specs
// whatever handlers this test binary links.
func allBuiltins(tb testing.TB, sources []Source) []string {
	tb.Helper()
	names := map[string]bool{}
	for _, src := range sources {
		for _, m := range builtinRef.FindAllSubmatch(src.Data, -1) {
			names[string(m[1])] = true
		}
	}
	return slices.Sorted(maps.Keys(names))
}

var builtinRef = regexp.MustCompile(`builtin:\s*"?([A-Za-z0-9_.-]+)`)

const benchSpecs = `
kind: TaskType
name: ingest
handler: {builtin: noop}
dedup_key: 'schema_name + ":" + task_type + ":" + inputs.path'
inputs:
  type: object
  required: [path]
  properties:
    path: {type: string}
    n: {type: integer}
---
kind: Subscription
name: ingest-on-upload
event_type: "object.*"
when: 'event.payload.size > 0'
task_type: ingest
schema_name: '"s_" + event.payload.catalog_id'
inputs:
  path: 'event.payload.path'
  n: 'event.payload.size'
`

func benchSet(b *testing.B) *Set {
	b.Helper()
	set, err := Compile([]Source{{Name: "bench.yaml", Data: []byte(benchSpecs)}}, Options{Builtins: benchBuiltins})
	if err != nil {
		b.Fatal(err)
	}
	return set
}

// BenchmarkDedupKey evaluates a task type's dedup_key expression, once per
// enqueued task.
func BenchmarkDedupKey(b *testing.B) {
	tt, _ := benchSet(b).TaskType("ingest")
	inputs := map[string]any{"path": "gs://bucket/a/b/c.parquet", "n": 3}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := tt.DedupKey("s_abc", inputs); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkValidateInputs checks inputs against a task type's JSON Schema,
// once per enqueued task.
func BenchmarkValidateInputs(b *testing.B) {
	tt, _ := benchSet(b).TaskType("ingest")
	inputs := map[string]any{"path": "gs://bucket/a/b/c.parquet", "n": 3}
	b.ReportAllocs()
	for b.Loop() {
		if err := tt.ValidateInputs(inputs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSubscriptionEvaluate turns one event into its task: when,
// schema_name, inputs and dedup_key expressions plus the inputs' schema.
func BenchmarkSubscriptionEvaluate(b *testing.B) {
	sub := benchSet(b).Subscriptions()[0]
	event := map[string]any{
		"event_id": "019e6318-0000-7000-8000-000000000001", "event_type": "object.created",
		"scope": wftype.ScopeCatalog, "schema_name": "s_abc", "created_at": time.Date(2026, 2, 26, 18, 9, 4, 0, time.UTC),
		"payload": map[string]any{"catalog_id": "abc", "path": "gs://bucket/a/b/c.parquet", "size": 42},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := sub.Evaluate(event); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
