package spec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/wftype"
)

const inputsSpec = `
kind: TaskType
name: ingest
handler: {builtin: noop}
inputs:
  type: object
  additionalProperties: false
  required: [path, mode]
  properties:
    path: {type: string, minLength: 1}
    mode: {enum: [append, replace]}
    size: {type: integer, minimum: 0}
    "a/b": {type: string}
    tags: {type: array, items: {type: string}}
    owner: {type: string, format: email}
dedup_key: 'schema_name + ":" + task_type + ":" + inputs.path'
`

func TestValidateInputs(t *testing.T) {
	t.Parallel()
	tt := taskType(t, inputsSpec, "ingest")

	t.Run("Valid", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, tt.ValidateInputs(map[string]any{"path": "gs://b/x.csv", "mode": "append", "size": 3}))
		require.NoError(t, tt.ValidateInputs(json.RawMessage(`{"path":"x","mode":"replace","tags":["a"]}`)))
	})

	t.Run("EveryViolationWithItsPointer", func(t *testing.T) {
		t.Parallel()
		err := tt.ValidateInputs(map[string]any{
			"path": 42, "size": -1, "a/b": 1, "tags": []any{"ok", 7}, "colour": "red", "owner": "nobody",
		})
		var ie InputErrors
		require.ErrorAs(t, err, &ie)
		var lines []string
		for _, e := range ie {
			lines = append(lines, e.String())
		}
		require.Equal(t, []string{
			"/a~1b: expected string, got number",
			"/colour: unknown field; expected one of a/b, mode, owner, path, size, tags",
			"/mode: required field is missing",
			`/owner: expected a valid email; got "nobody"`,
			"/path: expected string, got number",
			"/size: must be >= 0; got -1",
			"/tags/1: expected string, got number",
		}, lines, "sorted by pointer")
		require.True(t, strings.HasPrefix(err.Error(), "invalid inputs: "))
	})

	t.Run("Enum", func(t *testing.T) {
		t.Parallel()
		err := tt.ValidateInputs(map[string]any{"path": "x", "mode": "merge"})
		require.EqualError(t, err, `invalid inputs: /mode: must be one of append, replace; got "merge"`)
	})

	t.Run("NotAnObject", func(t *testing.T) {
		t.Parallel()
		require.EqualError(t, tt.ValidateInputs([]int{1}), "invalid inputs: (root): expected object, got array")
	})

	t.Run("NotJSON", func(t *testing.T) {
		t.Parallel()
		require.ErrorContains(t, tt.ValidateInputs(map[string]any{"path": make(chan int)}), "error encoding inputs as JSON")
	})
}

func TestDedupKey(t *testing.T) {
	t.Parallel()

	// dedupSpec is a task type t whose dedup_key is expr (none when "").
	dedupSpec := func(expr string) string {
		src := "kind: TaskType\nname: t\nhandler: {builtin: noop}\n"
		if expr != "" {
			src += "dedup_key: '" + expr + "'\n"
		}
		return src
	}
	// call is one DedupKey call on a schema's inputs and what it returns:
	// key and ok, or an error containing every phrase of errs.
	type call struct {
		schema string
		inputs map[string]any
		key    string
		ok     bool
		errs   []string
	}
	for _, tc := range []struct {
		name, src, taskType string
		// expr is what DedupKeyExpr returns.
		expr  string
		calls []call
	}{
		{"Evaluates", inputsSpec, "ingest", `schema_name + ":" + task_type + ":" + inputs.path`, []call{
			{schema: "s_abc", inputs: map[string]any{"path": "gs://b/x.csv"}, key: "s_abc:ingest:gs://b/x.csv", ok: true},
		}},
		{"NoExpression", dedupSpec(""), "t", "", []call{
			{schema: "system", inputs: map[string]any{"x": 1}},
		}},
		{"EmptyMeansNoDedup", dedupSpec(`inputs.key ?? ""`), "t", `inputs.key ?? ""`, []call{
			{schema: "system", inputs: map[string]any{}},
			{schema: "system", inputs: map[string]any{"key": "k1"}, key: "k1", ok: true},
		}},
		{"NotAString", dedupSpec("inputs.n"), "t", "inputs.n", []call{
			{schema: "system", inputs: map[string]any{"n": 3}, errs: []string{"error computing dedup_key of task type t", "returned int, expected a string"}},
			{schema: "system", inputs: map[string]any{}, errs: []string{"returned nil, expected a string"}},
		}},
		{"TooLong", dedupSpec(`repeat("x", 513)`), "t", `repeat("x", 513)`, []call{
			{schema: "system", errs: []string{"513 bytes long, at most 512"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tt := taskType(t, tc.src, tc.taskType)
			require.Equal(t, tc.expr, tt.DedupKeyExpr())
			for _, c := range tc.calls {
				key, ok, err := tt.DedupKey(c.schema, c.inputs)
				if len(c.errs) > 0 {
					for _, phrase := range c.errs {
						require.ErrorContains(t, err, phrase)
					}
					continue
				}
				require.NoError(t, err)
				require.Equal(t, c.ok, ok)
				require.Equal(t, c.key, key)
			}
		})
	}
}

func TestTaskTypeAccessors(t *testing.T) {
	t.Parallel()
	set := compileYAML(t, `
kind: TaskType
name: hook
description: Posts the task.
scope: CATALOG
execution_mode: SYNCHRONOUS
handler:
  http: {url: "https://example.com/${PATH}", headers: {X-Token: "${TOKEN}"}}
timeout: 2m
visibility_timeout: 90s
priority: 7
max_retries: 0
concurrency: {per_instance: 1}
reporters: [gcs_detailed, database]
`)
	tt, ok := set.TaskType("hook")
	require.True(t, ok)
	require.Equal(t, "Posts the task.", tt.Description())
	require.Equal(t, wftype.ScopeCatalog, tt.Scope())
	require.Equal(t, wftype.ModeSync, tt.Mode())
	require.Equal(t, Location{File: "test.yaml", Line: 2, Col: 1}, tt.Source())
	require.Equal(t, "test.yaml:2:1", tt.Source().String())
	h := tt.Handler()
	require.Equal(t, HandlerHTTP, h.Kind)
	require.Equal(t, 2*time.Minute, h.HTTP.Timeout, "the request timeout defaults to the task's")
	h.HTTP.Headers["X-Token"] = "changed"
	require.Equal(t, "${TOKEN}", tt.Handler().HTTP.Headers["X-Token"], "Handler returns a copy")
	require.JSONEq(t, `{"type":"object"}`, string(tt.InputSchema()))
	require.Equal(t, 0, tt.MaxRetries())
	require.Equal(t, 2*time.Minute, tt.Timeout())
	require.Equal(t, 90*time.Second, tt.VisibilityTimeout())
	require.Equal(t, 7, tt.Priority())
	require.Equal(t, Concurrency{PerInstance: 1}, tt.Concurrency())
	reps := tt.Reporters()
	require.Equal(t, []ReporterKind{ReporterGCSDetailed, ReporterDatabase}, reps)
	reps[0] = "x"
	require.Equal(t, ReporterGCSDetailed, tt.Reporters()[0])
	require.Equal(t, DispatchRule{
		TaskType: "hook", Mode: wftype.ModeSync, Priority: 7, Concurrency: Concurrency{PerInstance: 1},
		MaxSnoozes: DefaultMaxSnoozes, Backoff: defaultBackoff(), VisibilityTimeout: 90 * time.Second, Timeout: 2 * time.Minute,
	}, tt.DispatchRule())
	require.Equal(t, []DispatchRule{tt.DispatchRule()}, set.DispatchRules())

	c, ok := set.Capability(wftype.ModeSync, "hook")
	require.True(t, ok)
	require.Equal(t, []RunnerRef{{Name: "sync", Type: RunnerSync, Priority: LocalRunnerPriority, Handler: HandlerHTTP}}, c.Runners)
	_, ok = set.Capability(wftype.ModeAsync, "hook")
	require.False(t, ok)
}
