// Package standard wires wf's reporters into one reporters.Factory: the
// "database" reporter (dbreporter) and the "gcs_detailed" reporter
// (gcsreporter). The engine opens it once at start-up, calls Factory.New for
// every run with the reporter names of the task's type, and closes it at
// shutdown.
//
// It is a package of its own because reporters cannot import its
// sub-packages (they import it).
package standard

import (
	"context"
	"errors"
	"fmt"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/dbreporter"
	"github.com/wfhq/wf/reporters/gcsreporter"
)

// Config holds what the standard reporters need.
type Config struct {
	// Progress is where the database reporter writes counts (*store.Store).
	// Required.
	Progress dbreporter.ProgressWriter
	// Database tunes the database reporter's batching; the zero value is the default.
	Database dbreporter.Config
	// GCS says where detailed reports go; the zero value writes them under a
	// local folder.
	GCS gcsreporter.Config
}

// Open validates cfg, opens the detailed reports' destination and returns a
// factory that knows reporters.NameDatabase and reporters.NameGCSDetailed.
// Close the factory at shutdown.
func Open(ctx context.Context, cfg Config) (*reporters.Factory, error) {
	if cfg.Progress == nil {
		return nil, errors.New("error opening reporters: the progress writer is nil")
	}
	db, err := dbreporter.NewBuilder(cfg.Progress, cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("error opening reporters: %w", err)
	}
	gcs, err := gcsreporter.Open(ctx, cfg.GCS)
	if err != nil {
		return nil, fmt.Errorf("error opening reporters: %w", err)
	}
	f, err := reporters.NewFactory(map[string]reporters.Builder{
		reporters.NameDatabase:    db,
		reporters.NameGCSDetailed: gcs,
	})
	if err != nil {
		return nil, errors.Join(err, gcs.Close())
	}
	return f, nil
}
