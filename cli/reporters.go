package cli

import (
	"context"
	"fmt"
	"log/slog"

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
// or file://<data_dir>/reports) and returns the factory, to close at
// shutdown, and the hook that builds the reporters of each run from its
// task type's spec. Every reporter a spec names is checked here, so an
// unknown one fails at start-up rather than at the first run.
func taskReporters(ctx context.Context, cfg *config.Config, st *store.Store, specs *spec.Set) (*reporters.Factory, func(*wftype.Task) (reporters.Reporter, error), error) {
	f, err := standard.Open(ctx, standard.Config{
		Progress: st,
		GCS:      gcsreporter.Config{BucketURL: cfg.Report.BucketURL, Gzip: cfg.Report.Gzip},
	})
	if err != nil {
		return nil, nil, err
	}
	names := make(map[string][]string, len(specs.TaskTypes()))
	for _, tt := range specs.TaskTypes() {
		for _, k := range tt.Reporters() {
			names[tt.Name()] = append(names[tt.Name()], string(k))
		}
		if err := f.Check(names[tt.Name()]); err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("error opening reporters: task type %s (%s): %w", tt.Name(), tt.Source(), err)
		}
	}
	build := func(t *wftype.Task) (reporters.Reporter, error) {
		// A task type no spec declares any more reports nowhere.
		return f.New(names[t.TaskType], reporters.TaskInfo{ID: t.ID, SchemaName: t.SchemaName, TaskType: t.TaskType})
	}
	return f, build, nil
}

// closeReporters closes the reporter factory at shutdown, logging a failure.
func closeReporters(f *reporters.Factory, log *slog.Logger) {
	if err := f.Close(); err != nil {
		log.Warn("closing reporters failed", "err", err)
	}
}
