package scheduler_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/maintenance/scheduler"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/objio"
)

// TestRefusedTickFiresTheOthers: a schedule whose task is refused when its
// tick comes (its file input lies, once links are followed, outside the
// tenant's folder: the folder "in" was made a link to elsewhere after the
// specs were deployed) does not stop the other schedules: each pass fires
// their ticks, and the refused tick is recorded without a task (settled,
// counted as Refused, never retried), not tried again and again with every
// other schedule's ticks held back until the catch-up window lets them go.
func TestRefusedTickFiresTheOthers(t *testing.T) {
	t.Parallel()
	set, err := spec.Compile([]spec.Source{{Name: "s.yaml", Data: []byte(`kind: TaskType
name: tick
handler: {builtin: noop}
---
kind: TaskType
name: load
handler: {builtin: noop}
scope: SYSTEM
inputs: {type: object, properties: {file: {type: string}}}
files: [file]
---
kind: Schedule
name: every-minute
cron: "* * * * *"
task_type: tick
---
kind: Schedule
name: nightly-load
cron: "* * * * *"
task_type: load
inputs: {file: in/today.csv}
`)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	root, elsewhere := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, objio.SystemTenant), 0o755))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(root, objio.SystemTenant, "in")))

	b := setup(t)
	b.store = dbtest.NewStore(t)
	cl := client.New(b.store, set).WithFiles(objio.New(objio.Config{LocalRoots: []string{root}}))
	s, err := scheduler.New(scheduler.Config{
		Store: b.store, Client: cl, Schedules: set.Schedules(), Clock: b.clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	_, err = s.Resume(b.ctx, b.t0)
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		r, err := s.RunAt(b.ctx, b.t0.Add(time.Duration(i)*time.Minute))
		require.NoError(t, err, "pass %d", i)
		require.Equal(t, scheduler.Result{Fired: 1, Refused: 1}, r, "pass %d", i)
	}
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'tick'`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'load'`))
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM tasks.schedule_ticks WHERE schedule_name = 'nightly-load' AND task_id IS NULL`),
		"each refused tick is settled")
	r, err := s.RunAt(b.ctx, b.t0.Add(3*time.Minute+30*time.Second))
	require.NoError(t, err)
	require.Equal(t, scheduler.Result{}, r, "nothing is tried again")
}
