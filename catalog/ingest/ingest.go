// Package ingest is the ingestion pipeline behind POST /ingestion: the
// "ingestion" builtin handler reads one source (a local file, an http(s)
// URL or a bucket object) of GeoJSON, NDJSON or CSV records, checks and
// measures every record (catalog/geom), and merges them into the
// collection's feature table in batches, keeping one version history per
// external id: an unchanged record writes nothing, a changed one closes the
// current version's validity and adds a new version.
//
// Memory does not grow with the source: records are decoded from a stream,
// checked by one worker per CPU and written in batches of bounded size,
// one batch being written while the next is cut and the previous one
// reported (pipeline.go). Every record is reported through the
// task's reporter with the seed's per-record envelope; a rejected record is
// reported with its reason and does not stop the others. At the end the
// handler emits ingestion.completed with the counts.
package ingest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// HandlerName is the builtin handler name of the ingestion task type.
const HandlerName = "ingestion"

// EventCompleted is emitted when an ingestion finishes.
const EventCompleted = "ingestion.completed"

// Defaults, filled in by Config.withDefaults.
const (
	// DefaultBatchSize is how many records one merge writes.
	DefaultBatchSize = 2000
	// DefaultBatchBytes bounds the encoded size of one batch.
	DefaultBatchBytes = 32 << 20
)

// Config configures the ingestion handler.
type Config struct {
	// Store runs the statements, on a pool. Required.
	Store *store.Store
	// Emitter writes ingestion.completed; nil means events.NewEmitter(Store).
	Emitter *events.Emitter
	// Objects opens sources; nil means objio.New with the zero Config.
	Objects *objio.Opener
	// BatchSize is how many records one merge writes; 0 means DefaultBatchSize.
	BatchSize int
	// BatchBytes bounds the geometry and attribute bytes of one batch; 0
	// means DefaultBatchBytes.
	BatchBytes int
	// Logger receives a line per finished ingestion; nil means slog.Default().
	Logger *slog.Logger
	// ScratchDir holds the copies of gdal sources while GDAL reads them, in
	// a folder per tenant; "" means <os temp dir>/wf-scratch.
	ScratchDir string
}

// withDefaults returns cfg with every unset field given its default; it is
// the one place where the handler's defaults live.
func (cfg Config) withDefaults() Config {
	if cfg.Emitter == nil && cfg.Store != nil {
		cfg.Emitter = events.NewEmitter(cfg.Store)
	}
	cfg.Objects = objio.Or(cfg.Objects)
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.BatchBytes = cmp.Or(cfg.BatchBytes, DefaultBatchBytes)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return cfg
}

// Handler is the ingestion handler. It holds no state between runs and is
// safe for concurrent use.
type Handler struct {
	cfg Config
}

// New validates cfg and returns the handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("error creating the ingestion handler: the store is nil")
	}
	cfg = cfg.withDefaults()
	if cfg.BatchSize < 0 || cfg.BatchBytes < 0 {
		return nil, fmt.Errorf("error creating the ingestion handler: batch size %d and batch bytes %d must be positive", cfg.BatchSize, cfg.BatchBytes)
	}
	return &Handler{cfg: cfg}, nil
}

// Counts are an ingestion's records by outcome.
type Counts struct {
	// Read is every record of the source.
	Read int64 `json:"read"`
	// Created, Versioned and Unchanged are the stored records by what the
	// merge did (see store.MergeAction).
	Created   int64 `json:"created"`
	Versioned int64 `json:"versioned"`
	Unchanged int64 `json:"unchanged"`
	// Rejected records were refused, with a reason in their envelope.
	Rejected int64 `json:"rejected"`
}

// Outputs are an ingestion task's outputs (the reporters add theirs).
type Outputs struct {
	CatalogID    string `json:"catalog_id"`
	CollectionID string `json:"collection_id"`
	// Source is the location read.
	Source string `json:"source"`
	// Table is the feature table, schema.collection.
	Table string `json:"table"`
	// ValidityStart is the start of the validity of the versions written.
	ValidityStart time.Time `json:"validity_start"`
	Features      Counts    `json:"features"`
	// Summary describes the stored records as a collection: count, extent,
	// and each attribute's types and nulls.
	Summary Summary `json:"summary"`
}

// indexBuildTimeout bounds the index build after a load into an empty
// collection (a few seconds per million features); should it fail, the
// next task on the collection builds them (store.CreateFeatureTable).
const indexBuildTimeout = 10 * time.Minute

// Handle implements the builtin handler signature: it ingests the source
// named in the task's inputs. Bad inputs, an unknown collection and a
// source that does not exist or cannot be parsed fail the task permanently;
// database and network errors are returned for a retry (re-ingesting what
// was already written changes nothing).
func (h *Handler) Handle(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	in, err := ParseInputs(task.Inputs)
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	table, err := h.cfg.Store.TaskFeatureTable(ctx, task.SchemaName, in.CatalogID, in.CollectionID, "ingesting into")
	if err != nil {
		return nil, err
	}
	// The source is read as the task's tenant: a local one only from the
	// tenant's folder under the roots.
	objs, err := h.cfg.Objects.Tenant(task.SchemaName)
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	if err := objs.Check(in.Source); err != nil {
		return nil, wftype.Permanent(err)
	}
	var src io.ReadCloser
	format := in.Format
	if in.Format == FormatGDAL {
		// ogr2ogr writes one GeoJSON feature per line.
		src, err = h.openGDAL(ctx, objs, table.Schema, in)
		format = FormatNDJSON
	} else {
		src, err = objs.Open(ctx, in.Source)
		if errors.Is(err, objio.ErrInvalid) || errors.Is(err, objio.ErrNotFound) || errors.Is(err, objio.ErrForbidden) {
			err = wftype.Permanent(err)
		}
	}
	if err != nil {
		return nil, err
	}
	defer src.Close()
	rr, err := newRecordReader(format, src, in)
	if err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error reading %s: %w", in.Source, err))
	}
	// The asset is recorded only once its source opened: a typo or an
	// unreachable location leaves no active asset behind (whose
	// asset.created would start more work on a source that is not there).
	if err := h.recordSource(ctx, in); err != nil {
		return nil, err
	}
	validFrom := task.Timestamp
	if in.ValidityStart != nil {
		validFrom = *in.ValidityStart
	}
	p := &processor{idAttribute: in.IDAttribute, validFrom: validFrom.UTC(), s2Level: DefaultS2Level, mapping: in.Attributes}
	if in.S2Level != nil {
		p.s2Level = *in.S2Level
	}
	if in.AssetID != "" {
		p.assetID = &in.AssetID
	}
	started := time.Now()
	sum := newSummarizer()
	// Into a new or emptied collection, the spatial and geoid indexes are
	// built once after the load instead of row by row.
	bulk, err := h.cfg.Store.BeginBulkLoad(ctx, table)
	if err != nil {
		return nil, err
	}
	counts, runErr := h.load(ctx, table, rr, p, rep, sum)
	if bulk {
		// Built whatever the outcome (a rolled-back load leaves the table empty).
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), indexBuildTimeout)
		err := h.cfg.Store.EndBulkLoad(bctx, table)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	if runErr != nil && !errors.Is(runErr, errSource) {
		return nil, runErr
	}
	if runErr != nil {
		// The source broke off: what was read is stored and reported, the
		// rest cannot be read by a retry either.
		return nil, wftype.Permanent(fmt.Errorf("error reading %s after %d records: %w", in.Source, counts.Read, runErr))
	}
	out := Outputs{CatalogID: in.CatalogID, CollectionID: in.CollectionID, Source: in.Source, Table: table.String(),
		ValidityStart: p.validFrom, Features: counts, Summary: sum.summary()}
	if err := h.emitCompleted(ctx, task, out); err != nil {
		return nil, err
	}
	h.cfg.Logger.InfoContext(ctx, "ingestion finished", "task_id", task.ID, "table", out.Table,
		"read", counts.Read, "created", counts.Created, "versioned", counts.Versioned,
		"unchanged", counts.Unchanged, "rejected", counts.Rejected, "took", time.Since(started).Round(time.Millisecond))
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("error encoding the ingestion outputs: %w", err)
	}
	return b, nil
}

// load runs the pipeline in one transaction (store.FeatureLoad): it commits
// when every record was read, or when the source broke off (what was read
// is kept, as a retry could not read more); a cancelled or failed run rolls
// back, leaving the collection as it was.
func (h *Handler) load(ctx context.Context, table store.FeatureTable, rr recordReader, p *processor, rep reporters.Reporter, sum *summarizer) (Counts, error) {
	l, err := h.cfg.Store.BeginFeatureLoad(ctx, table)
	if err != nil {
		return Counts{}, err
	}
	counts, runErr := h.run(ctx, l, rr, p, rep, sum)
	if runErr != nil && ctx.Err() != nil && !errors.Is(runErr, ctx.Err()) {
		// A statement cut short by the cancellation fails on its closed
		// connection: say why it was closed.
		runErr = fmt.Errorf("error ingesting into %s: %w (then: %v)", table, context.Cause(ctx), runErr)
	}
	if runErr != nil && !errors.Is(runErr, errSource) {
		if err := l.Rollback(ctx); err != nil {
			h.cfg.Logger.WarnContext(ctx, "rolling back a failed ingestion", "table", table.String(), "error", err)
		}
		return counts, runErr
	}
	if err := l.Commit(ctx); err != nil {
		return counts, err
	}
	return counts, runErr
}

// recordSource records the source as the catalog's asset in.AssetID (kind
// vector, feeding the collection), emitting asset.created or asset.updated.
func (h *Handler) recordSource(ctx context.Context, in Inputs) error {
	if in.AssetID == "" {
		return nil
	}
	collection := in.CollectionID
	_, err := registry.New(h.cfg.Store, h.cfg.Emitter).RecordAsset(ctx, store.NewAsset{
		CatalogID: in.CatalogID, ID: in.AssetID, CollectionID: &collection, URI: in.Source, Kind: store.AssetVector,
	})
	var verr *registry.ValidationError
	if errors.As(err, &verr) || errors.Is(err, wftype.ErrNotFound) {
		return wftype.Permanent(err)
	}
	return err
}

// emitCompleted writes ingestion.completed, once per task while it is
// pending (its dedup key names the task).
func (h *Handler) emitCompleted(ctx context.Context, task *wftype.Task, out Outputs) error {
	payload, err := json.Marshal(map[string]any{
		"task_id": task.ID, "catalog_id": out.CatalogID, "collection_id": out.CollectionID,
		"table": out.Table, "source": redact.URL(out.Source), "features": out.Features, // events are shown to anyone: no credentials
	})
	if err != nil {
		return fmt.Errorf("error encoding %s: %w", EventCompleted, err)
	}
	_, err = h.cfg.Emitter.Emit(ctx, events.Event{
		Type: EventCompleted, Scope: events.ScopeCollection, SchemaName: task.SchemaName,
		Payload: payload, DedupKey: EventCompleted + ":" + task.ID.String(),
	})
	if err != nil {
		return fmt.Errorf("error emitting %s: %w", EventCompleted, err)
	}
	return nil
}
