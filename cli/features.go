package cli

import (
	"context"
	"log/slog"

	"wf/engine/featuretasks"
	"wf/engine/store"
	"wf/runners/builtin"
)

// registerFeatures registers the feature data handlers (ingestion,
// export_features, collection_drop, catalog_drop) in reg: spec validation
// needs their names, and the commands that run tasks hand them the database
// through their context (withFeatureDeps). A name reg already holds keeps
// its handler (a program embedding wf may bring its own).
func registerFeatures(reg *builtin.Registry) {
	_ = featuretasks.Register(reg)
}

// withFeatureDeps returns ctx carrying the feature handlers' dependencies,
// for the task runs started under it.
func withFeatureDeps(ctx context.Context, st *store.Store, log *slog.Logger) (context.Context, error) {
	return featuretasks.WithDeps(ctx, featuretasks.Deps{Store: st, Logger: log})
}
