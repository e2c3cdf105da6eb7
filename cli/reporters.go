package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/gcsreporter"
	"github.com/wfhq/wf/reporters/standard"
	"github.com/wfhq/wf/wftype"
)

// taskReporters opens the standard reporters ("database" into the tasks'
// progress through st, "gcs_detailed" into the configured report bucket,
// or file://<data_dir>/reports) and returns them: the factory, to close at
// shutdown, and build, the hook that builds the reporters of each run from
// its task type's spec. Every reporter a spec names is checked here, so an
// unknown one fails at start-up rather than at the first run.
func taskReporters(ctx context.Context, cfg *config.Config, st *store.Store, specs *spec.Set) (*taskReporterSet, error) {
	f, err := standard.Open(ctx, standard.Config{
		Progress: st,
		GCS:      gcsreporter.Config{BucketURL: cfg.Report.BucketURL, Gzip: cfg.Report.Gzip},
	})
	if err != nil {
		return nil, err
	}
	rs := &taskReporterSet{factory: f}
	names, err := rs.check(specs)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	rs.names.Store(&names)
	return rs, nil
}

// taskReporterSet builds the reporters of each run from its task type's
// spec, in the spec set the engine follows (use, after a reload).
type taskReporterSet struct {
	factory *reporters.Factory
	names   atomic.Pointer[map[string][]string] // task type → reporter kinds
}

// check returns the reporters each task type of specs names, and an error
// naming the first task type whose reporters cannot be built.
func (rs *taskReporterSet) check(specs *spec.Set) (map[string][]string, error) {
	names := make(map[string][]string, len(specs.TaskTypes()))
	for _, tt := range specs.TaskTypes() {
		for _, k := range tt.Reporters() {
			names[tt.Name()] = append(names[tt.Name()], string(k))
		}
		if err := rs.factory.Check(names[tt.Name()]); err != nil {
			return nil, fmt.Errorf("error opening reporters: task type %s (%s): %w", tt.Name(), tt.Source(), err)
		}
	}
	return names, nil
}

// use makes runs from now on report as specs says (checked by check).
func (rs *taskReporterSet) use(specs *spec.Set) error {
	names, err := rs.check(specs)
	if err != nil {
		return err
	}
	rs.names.Store(&names)
	return nil
}

// build builds the reporters of one run. A task type no spec declares any
// more reports nowhere.
func (rs *taskReporterSet) build(t *wftype.Task) (reporters.Reporter, error) {
	return rs.factory.New((*rs.names.Load())[t.TaskType], reporters.TaskInfo{ID: t.ID, SchemaName: t.SchemaName, TaskType: t.TaskType})
}

// closeReporters closes the reporter factory at shutdown, logging a failure.
func closeReporters(f *reporters.Factory, log *slog.Logger) {
	if err := f.Close(); err != nil {
		log.Warn("closing reporters failed", "err", err)
	}
}
