package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompileShowsUnique: wf compile prints a task type's unique period,
// and wf validate refuses a bad one at its line.
func TestCompileShowsUnique(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": `kind: TaskType
name: report
handler: {builtin: noop}
dedup_key: '"report:" + string(inputs.day)'
unique: {period: 24h, states: [COMPLETED, FAILED]}
on_duplicate: cancel_running
---
kind: Subscription
name: throttled
event_type: survey.updated
task_type: report
dedup_key: '"survey:" + event.schema_name'
unique: {period: 10m}
`})
	code, out, errOut := runWF(t, "compile", dir)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "    unique for: 24h from a task's creation, while it is live or ended COMPLETED, FAILED\n    on duplicate: cancel_running\n")
	require.Contains(t, out, "dedup key \"survey:\" + event.schema_name\n    unique for: 10m from a task's creation, while it is live or ended COMPLETED\n")

	bad := writeSpecs(t, map[string]string{"a.yaml": `kind: TaskType
name: report
handler: {builtin: noop}
unique:
  period: 91d
`})
	code, out, _ = runWF(t, "validate", bad)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, out, filepath.Join(bad, "a.yaml")+`:5:11: unique.period: expected a duration such as 30s, 5m or 1h30m; got "91d"`)
}
