package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/runners/builtin"
)

// registerFeatures registers the feature data handlers (ingestion,
// export_features, collection_drop, catalog_drop) in reg: spec validation
// needs their names, and the commands that run tasks hand them the database
// through their context (withFeatureDeps). A name reg already holds keeps
// its handler (a program embedding wf may bring its own).
func registerFeatures(reg *builtin.Registry) {
	_ = builtins.Register(reg)
}

// withFeatureDeps returns ctx carrying the feature handlers' dependencies,
// for the task runs started under it. Local sources and destinations are
// limited to files.local_roots.
func withFeatureDeps(ctx context.Context, cfg *config.Config, st *store.Store, log *slog.Logger) (context.Context, error) {
	return builtins.WithDeps(ctx, builtins.Deps{Store: st, LocalRoots: cfg.Files.LocalRoots, Logger: log})
}

// createFilesFolder creates <data_dir>/files, the default of
// files.local_roots, when it is one of the roots and is missing, so that
// files can be dropped there for ingestion and exports land there.
func createFilesFolder(cfg *config.Config) error {
	dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "files"))
	if err != nil || !slices.Contains(cfg.Files.LocalRoots, dir) {
		return nil
	}
	// The data folder itself must stay reachable by the local PostgreSQL's
	// user (another user when wf runs as root), so it is created first, open
	// to traversal; only the files folder is private.
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("error creating the data folder: %w", err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("error creating the files folder: %w", err)
	}
	return nil
}
