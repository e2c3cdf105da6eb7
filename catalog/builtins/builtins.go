// Package builtins binds the builtin handlers of feature data — ingestion
// (catalog/ingest), export_features (catalog/export), collection_drop and
// catalog_drop (catalog/collections), gdal (catalog/gdal), tiles_preseed
// (catalog/tiles), elasticsearch and elasticsearch_drop (catalog/search),
// dwh_join (catalog/warehouse) — to their dependencies.
//
// Spec validation needs only the handler names (Names). New builds the
// handlers from a Deps when the engine is built, so a missing dependency is
// a start-up error, not a run-time retry; Register adds them to the registry
// of the process that runs tasks. There is no package-level state.
package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/wfhq/wf/catalog/collections"
	"github.com/wfhq/wf/catalog/export"
	"github.com/wfhq/wf/catalog/gdal"
	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/catalog/search"
	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/catalog/warehouse"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// Names lists the handler names Register adds.
func Names() []string {
	return []string{ingest.HandlerName, export.HandlerName, collections.CollectionDropName, collections.CatalogDropName,
		gdal.HandlerName, tiles.HandlerName, search.HandlerName, search.DropHandlerName, warehouse.HandlerName}
}

// Deps are what the handlers need at run time.
type Deps struct {
	// Store is the queue's store, on a pool, with the catalog's
	// (store.WithCatalog, catalog.database_url): the handlers read and
	// write features and the registry in Store.Catalog(), tasks' progress
	// in Store. Required.
	Store *store.Store
	// Emitter writes ingestion.completed, asset events and catalog.dropped /
	// collection.dropped into the queue; nil means events.NewEmitter(Store).
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
	// HTTPClient fetches http(s) sources when Objects is nil; nil means one
	// that refuses loopback, private, link-local and other special-purpose
	// addresses (see internal/egress and outbound.allow).
	HTTPClient *http.Client
	// Logger receives a line per finished ingestion; nil means slog.Default().
	Logger *slog.Logger
	// TileCacheURL is the tile cache tiles_preseed writes (tiles.cache_url):
	// gs://bucket/prefix or file:///folder; "" means tiles.Config's default.
	TileCacheURL string
	// Search is the Elasticsearch cluster (elasticsearch.*); without
	// addresses the search handlers are marked unserved (Register).
	Search search.Settings
	// Warehouses are the declared warehouse connections (warehouse.connections)
	// that dwh_join may read.
	Warehouses []config.WarehouseConnection
}

// Handlers are the handlers, bound to their dependencies.
type Handlers struct {
	ingest  *ingest.Handler
	export  *export.Handler
	collect *collections.Handlers
	gdal    *gdal.Handler
	tiles   *tiles.Handler
	search  *search.Handler
	dwh     *warehouse.Handler
}

// New checks d and builds the handlers from it.
func New(d Deps) (*Handlers, error) {
	if d.Store == nil {
		return nil, errors.New("error configuring the feature handlers: Store is required")
	}
	if d.Objects == nil {
		if len(d.LocalRoots) == 0 {
			return nil, errors.New("error configuring the feature handlers: LocalRoots is required (files.local_roots)")
		}
		d.Objects = objio.New(objio.Config{LocalRoots: d.LocalRoots, RootsHint: "set files.local_roots", HTTPClient: d.HTTPClient})
	}
	if d.Emitter == nil {
		d.Emitter = events.NewEmitter(d.Store)
	}
	queue, cat := d.Store, d.Store.Catalog()
	in, err := ingest.New(ingest.Config{Store: cat, Emitter: d.Emitter, Objects: d.Objects, Logger: d.Logger})
	if err != nil {
		return nil, err
	}
	ex, err := export.New(export.Config{Store: cat, Objects: d.Objects})
	if err != nil {
		return nil, err
	}
	co, err := collections.New(cat, d.Emitter)
	if err != nil {
		return nil, err
	}
	gd, err := gdal.New(gdal.Config{Store: cat, Emitter: d.Emitter, Objects: d.Objects})
	if err != nil {
		return nil, err
	}
	ts, err := tiles.New(tiles.Config{Store: cat, Queue: queue, CacheURL: d.TileCacheURL})
	if err != nil {
		return nil, err
	}
	se, err := search.New(search.Config{Store: cat, Settings: d.Search})
	if err != nil {
		return nil, err
	}
	wh, err := warehouse.New(warehouse.Config{Store: cat, Objects: d.Objects, Connections: d.Warehouses})
	if err != nil {
		return nil, err
	}
	return &Handlers{ingest: in, export: ex, collect: co, gdal: gd, tiles: tiles.NewHandler(ts), search: se, dwh: wh}, nil
}

// Register adds the handlers to reg. A name reg already holds keeps
// its handler (an embedding program may bring its own) and is reported in
// the error; the other names are registered all the same.
func (h *Handlers) Register(reg *builtin.Registry) error {
	return errors.Join(
		reg.Register(ingest.HandlerName, h.Ingest),
		reg.Register(export.HandlerName, h.Export),
		reg.Register(collections.CollectionDropName, h.collect.DropCollection),
		reg.Register(collections.CatalogDropName, h.collect.DropCatalog),
		reg.Register(gdal.HandlerName, h.gdal.Handle),
		reg.Register(tiles.HandlerName, h.tiles.Handle),
		h.registerSearch(reg),
		reg.Register(warehouse.HandlerName, h.dwh.Handle),
	)
}

// registerSearch adds the search handlers to reg, or, without a cluster
// (elasticsearch.addresses), marks them unserved, naming the setting: this
// instance then claims none of their tasks and its event consumer creates
// none, rather than completing them with nothing indexed.
func (h *Handlers) registerSearch(reg *builtin.Registry) error {
	if !h.search.Configured() {
		return errors.Join(reg.MarkUnserved(search.HandlerName, search.NotConfigured),
			reg.MarkUnserved(search.DropHandlerName, search.NotConfigured))
	}
	return errors.Join(reg.Register(search.HandlerName, h.search.Index), reg.Register(search.DropHandlerName, h.search.Drop))
}

// Ingest is the "ingestion" builtin handler (ingest.Handler.Handle).
func (h *Handlers) Ingest(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	return h.ingest.Handle(ctx, task, rep)
}

// Export is the "export_features" builtin handler (export.Handler.Handle).
func (h *Handlers) Export(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	return h.export.Handle(ctx, task, rep)
}
