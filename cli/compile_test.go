package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/spec"
)

func TestCompileText(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": validSpecYAML + `---
kind: TaskType
name: ingestion
handler:
  exec: {command: ["./ingest.sh", "--all files"], env: {TOKEN: "${TOKEN}"}}
concurrency: {per_instance: 2, global: 8}
dedup_key: 'inputs.path'
reporters: []
---
kind: Runner
name: gcp
type: cloudrun
settings: {project: p, region: europe-west1, jobs: {ingestion: ingest-job}}
`})
	code, out, errOut := runWF(t, "compile", dir)
	require.Equal(t, ExitOK, code, errOut)
	file := filepath.Join(dir, "a.yaml")
	for _, want := range []string{
		"spec set: 2 task types, 1 subscription, 1 schedule, 1 runner, from 1 file\n  " + file + "\n",
		"  ingestion  (" + file + ":15:1)\n",
		`    scope SYSTEM, ASYNCHRONOUS, handler exec ./ingest.sh "--all files" with env TOKEN` + "\n",
		"    priority 0, timeout 1h, visibility timeout default (the config's visibility_timeout), concurrency 2 per instance, 8 in all\n",
		"    retries 3, backoff 1s x 2 up to 1h, jitter 0.1\n",
		"    dedup key: inputs.path\n    created over the API by: admin\n    reporters: none\n",
		"  ASYNCHRONOUS  ingestion  gcp (10, job ingest-job) -> background (100, exec)\n",
		"  ASYNCHRONOUS  noop       background (100, builtin)\n",
		"    on event types matching catalog.*\n",
		`    creates noop in schema event.schema_name, dedup key "evt:" + event.event_id + ":" + task_type` + "\n",
		"    cron \"@hourly\" in UTC, missed ticks: skip\n    creates noop in schema system with inputs {}\n",
		"  gcp  (" + file + ":23:1)\n    cloudrun, priority 10, project p, region europe-west1\n    ingestion -> job ingest-job\n",
	} {
		require.Contains(t, out, want)
	}
}

// TestCompileTextEmptySections: a set of one task type lists each other
// kind of spec as none.
func TestCompileTextEmptySections(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": "kind: TaskType\nname: noop\nhandler: {builtin: noop}\n"})
	code, out, errOut := runWF(t, "compile", dir)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "\ntask types:\n  noop  ("+filepath.Join(dir, "a.yaml")+":1:1)\n")
	require.Contains(t, out, "\nsubscriptions:\n  none\n\nschedules:\n  none\n\nrunners:\n"+
		"  none besides the local background and sync runners\n\nworkflows:\n  none\n")
}

// TestCompileTextPayloadSchema: a subscription's payload schema is printed
// with it.
func TestCompileTextPayloadSchema(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": `kind: TaskType
name: noop
handler: {builtin: noop}
---
kind: Subscription
name: on-ingest
event_type: ingestion.completed
payload: {type: object, properties: {status: {type: string, enum: [ok, partial]}}}
when: event.payload.status == "ok"
task_type: noop
`})
	code, out, errOut := runWF(t, "compile", dir)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "    on event type ingestion.completed when event.payload.status == \"ok\"\n"+
		`    payload schema {"properties":{"status":{"enum":["ok","partial"],"type":"string"}},"type":"object"}`+"\n")
}

func TestCompileJSON(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": validSpecYAML})
	code, out, errOut := runWF(t, "compile", "--format", "json", dir)
	require.Equal(t, ExitOK, code, errOut)
	set, err := spec.Load(specOptions(), dir)
	require.NoError(t, err)
	want, err := json.MarshalIndent(set, "", "  ")
	require.NoError(t, err)
	require.Equal(t, string(want)+"\n", out)

	code, again, _ := runWF(t, "compile", "-f", "json", dir)
	require.Equal(t, ExitOK, code)
	require.Equal(t, out, again, "the JSON is stable")
}

func TestCompileInvalid(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": invalidSpecYAML})
	file := filepath.Join(dir, "a.yaml")
	for _, format := range []string{"text", "json"} {
		code, out, errOut := runWF(t, "compile", "--format", format, dir)
		require.Equal(t, ExitFailure, code)
		require.Empty(t, out)
		require.Equal(t, file+`:3:20: handler.builtin: unknown builtin handler "nope"; did you mean "noop"?`+"\n"+
			file+":4:11: priority: must be <= 100; got 500\nwf: 2 errors in 1 file\n", errOut)
	}

	code, _, errOut := runWF(t, "compile", "--format", "github", dir)
	require.Equal(t, ExitUsage, code)
	require.Equal(t, "wf: usage: --format must be one of text, json, dot; got \"github\"\n", errOut)

	code, _, errOut = runWF(t, "compile", filepath.Join(dir, "nope.yaml"))
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "does not exist")
}

func TestCompileWorkflowGraph(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": validSpecYAML + `---
kind: Workflow
name: fan
steps:
  first: {task_type: noop}
  each: {task_type: noop, depends_on: [first], for_each: '[1, 2, 3]', concurrency: 2, inputs: {n: item}}
  last: {task_type: noop, depends_on: [each], when: 'len(steps.each.outputs) == 3'}
`})
	code, out, errOut := runWF(t, "compile", dir)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "workflows:\n  fan  (")
	require.Contains(t, out, "    first  (noop)\n    └─▶ each\n"+
		"    each  (noop)  for each of [1, 2, 3], 2 at once\n    │   input n = item\n    └─▶ last\n"+
		"    last  (noop)  when len(steps.each.outputs) == 3\n")
	code, out, errOut = runWF(t, "compile", "--format", "dot", dir)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, `digraph "fan" {
  rankdir=LR;
  node [shape=box, fontname="Helvetica"];
  "first" [label="first\n(noop)"];
  "each" [label="each\n(noop)\nfor each [1, 2, 3]", shape=box3d];
  "last" [label="last\n(noop)\nwhen len(steps.each.outputs) == 3", style=dashed];
  "first" -> "each";
  "each" -> "last";
}
`, out)
}
