// Package builtins registers the builtin handlers of feature data —
// ingestion (catalog/ingest), export_features (catalog/export),
// collection_drop and catalog_drop (catalog/collections) — and hands them
// their dependencies.
//
// It follows the webhook handlers' pattern (catalog/webhooks): spec
// validation needs only the handler names, so Register adds plain functions
// to the application's registry when the application is built; `wf run`
// puts a Deps in the context the engine runs with (WithDeps), and each
// handler reads it from the context of its task run. A handler run without
// Deps fails (and is retried) instead of reaching a nil pointer. There is
// no package-level state.
package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/wfhq/wf/catalog/collections"
	"github.com/wfhq/wf/catalog/export"
	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// Names lists the handler names Register adds.
func Names() []string {
	return []string{ingest.HandlerName, export.HandlerName, collections.CollectionDropName, collections.CatalogDropName}
}

// Register adds the four handlers to reg. A name reg already holds keeps
// its handler (an embedding program may bring its own) and is reported in
// the error; the other names are registered all the same.
func Register(reg *builtin.Registry) error {
	return errors.Join(
		reg.Register(ingest.HandlerName, Ingest),
		reg.Register(export.HandlerName, Export),
		reg.Register(collections.CollectionDropName, DropCollection),
		reg.Register(collections.CatalogDropName, DropCatalog),
	)
}

// Deps are what the handlers need at run time.
type Deps struct {
	// Store runs the statements, on a pool. Required.
	Store *store.Store
	// Emitter writes ingestion.completed; nil means events.NewEmitter(Store).
	Emitter *events.Emitter
	// LocalRoots (files.local_roots) are the only folders whose files
	// sources and destinations may name by local path or file:// URL; a
	// relative path resolves against the first. Required unless Objects is
	// set: the locations come from API clients, who must not reach the rest
	// of the host's files.
	LocalRoots []string
	// Objects opens sources and creates exports; nil means objio.New
	// limited to LocalRoots (any http(s) URL, Cloud Storage with
	// Application Default Credentials or STORAGE_EMULATOR_HOST). When set,
	// LocalRoots is not used.
	Objects *objio.Opener
	// Logger receives a line per finished ingestion; nil means slog.Default().
	Logger *slog.Logger
}

// handlers are the built handlers a context carries.
type handlers struct {
	ingest  *ingest.Handler
	export  *export.Handler
	collect *collections.Handlers
}

// depsKey is the context key of the handlers.
type depsKey struct{}

// WithDeps builds the handlers from d once and returns a context carrying
// them for the task runs started under it.
func WithDeps(ctx context.Context, d Deps) (context.Context, error) {
	if d.Store == nil {
		return ctx, errors.New("error configuring the feature handlers: Store is required")
	}
	if d.Objects == nil {
		if len(d.LocalRoots) == 0 {
			return ctx, errors.New("error configuring the feature handlers: LocalRoots is required (files.local_roots)")
		}
		d.Objects = objio.New(objio.Config{LocalRoots: d.LocalRoots, RootsHint: "set files.local_roots"})
	}
	in, err := ingest.New(ingest.Config{Store: d.Store, Emitter: d.Emitter, Objects: d.Objects, Logger: d.Logger})
	if err != nil {
		return ctx, err
	}
	ex, err := export.New(export.Config{Store: d.Store, Objects: d.Objects})
	if err != nil {
		return ctx, err
	}
	co, err := collections.New(d.Store)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, depsKey{}, &handlers{ingest: in, export: ex, collect: co}), nil
}

// from returns the handlers a task run's context carries.
func from(ctx context.Context, name string) (*handlers, error) {
	if h, ok := ctx.Value(depsKey{}).(*handlers); ok {
		return h, nil
	}
	return nil, fmt.Errorf("the %s handler has no database here: it runs in `wf run`, whose context carries its dependencies", name)
}

// Ingest is the "ingestion" builtin handler (ingest.Handler.Handle).
func Ingest(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	h, err := from(ctx, ingest.HandlerName)
	if err != nil {
		return nil, err
	}
	return h.ingest.Handle(ctx, task, rep)
}

// Export is the "export_features" builtin handler (export.Handler.Handle).
func Export(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	h, err := from(ctx, export.HandlerName)
	if err != nil {
		return nil, err
	}
	return h.export.Handle(ctx, task, rep)
}

// DropCollection is the "collection_drop" builtin handler.
func DropCollection(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	h, err := from(ctx, collections.CollectionDropName)
	if err != nil {
		return nil, err
	}
	return h.collect.DropCollection(ctx, task, rep)
}

// DropCatalog is the "catalog_drop" builtin handler.
func DropCatalog(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	h, err := from(ctx, collections.CatalogDropName)
	if err != nil {
		return nil, err
	}
	return h.collect.DropCatalog(ctx, task, rep)
}
