package exec_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	wfexec "github.com/wfhq/wf/runners/exec"
	"github.com/wfhq/wf/runners/runnertest"
	"github.com/wfhq/wf/wftype"
)

// TestRecordsSchemaInvalidLine: a line that is well-formed JSON but breaks
// the envelope schema fails the task permanently, naming the line and the
// JSON pointer; the good lines before it were reported.
func TestRecordsSchemaInvalidLine(t *testing.T) {
	t.Parallel()
	good := recordLines(t) // three valid envelopes, one per line
	bad := `{"status":"SUCCESS","message":null,"record":{"type":"Feature","properties":{},"stats":null,"system":{}}}`
	cmd := script(t, t.TempDir(), "records", "cat >&3 <<'EOF'\n"+good+bad+"\nEOF\nsleep 1000")
	r := newRunner(t, wfexec.Config{Handlers: map[string]wfexec.Handler{"t": {Command: cmd, KillGrace: time.Second}}})
	rec := &runnertest.Recorder{}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	_, err := r.Run(ctx, runnertest.NewTask(wftype.ModeAsync, "t"), rec)
	require.NoError(t, ctx.Err(), "the child must be killed, not waited for")
	require.True(t, wftype.IsPermanent(err), "an invalid line is permanent: %v", err)
	require.ErrorContains(t, err, "file descriptor 3: line 4: invalid envelope")
	require.ErrorContains(t, err, `at "/record/stats": expected object, but got null`)
	runnertest.RequireRecords(t, runnertest.Records(), rec.Envelopes())
}
