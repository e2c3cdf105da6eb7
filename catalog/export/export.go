// Package export is the "export_features" builtin handler: it writes the
// features of a collection (the current versions, or those valid at a given
// time, optionally only those whose bounding box meets a given one) to a
// local path or a bucket object as newline-delimited GeoJSON Features or as
// one GeoJSON FeatureCollection. It streams: rows are read page by page
// (store.ScanFeatures) and written through a buffered writer, so memory does
// not grow with the collection, and the object appears only once it is
// complete.
package export

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/wfhq/wf/catalog/geom"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// HandlerName is the builtin handler name of the export task type.
const HandlerName = "export_features"

// Formats of an export.
const (
	// FormatNDJSON writes one GeoJSON Feature per line.
	FormatNDJSON = "ndjson"
	// FormatGeoJSON writes one GeoJSON FeatureCollection.
	FormatGeoJSON = "geojson"
)

// Inputs are an export task's inputs.
type Inputs struct {
	CatalogID    string `json:"catalog_id"`
	CollectionID string `json:"collection_id"`
	// Destination is a local path, gs://bucket/key or file:///path.
	Destination string `json:"destination"`
	// Format is ndjson (the default) or geojson.
	Format string `json:"format,omitempty"`
	// AsOf exports the versions valid at that time instead of the current ones.
	AsOf *time.Time `json:"as_of,omitempty"`
	// BBox keeps the features whose bounding box meets [min_lon, min_lat,
	// max_lon, max_lat].
	BBox []float64 `json:"bbox,omitempty"`
}

// Outputs are an export task's outputs.
type Outputs struct {
	Table       string `json:"table"`
	Destination string `json:"destination"`
	Format      string `json:"format"`
	Features    int64  `json:"features"`
}

// Config configures the export handler.
type Config struct {
	// Store reads the features, on a pool. Required.
	Store *store.Store
	// Objects creates destinations; nil means objio.New with the zero Config.
	Objects *objio.Opener
	// BatchSize is how many rows one read fetches; 0 means 1000.
	BatchSize int
}

// Handler is the export handler; it is safe for concurrent use.
type Handler struct {
	cfg Config
}

// New validates cfg and returns the handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("error creating the export handler: the store is nil")
	}
	cfg.Objects = objio.Or(cfg.Objects)
	cfg.BatchSize = cmp.Or(cfg.BatchSize, 1000)
	return &Handler{cfg: cfg}, nil
}

// ParseInputs decodes and checks an export task's inputs, strictly.
func ParseInputs(raw json.RawMessage) (Inputs, error) {
	return builtin.ParseInputs(raw, "export", (*Inputs).check)
}

// check gives in's unset fields their defaults and lists what is wrong with in.
func (in *Inputs) check() (errs []error) {
	in.Format = cmp.Or(in.Format, FormatNDJSON)
	if in.CatalogID == "" || in.CollectionID == "" {
		errs = append(errs, errors.New(`"catalog_id" and "collection_id" are required`))
	}
	if in.Destination == "" {
		errs = append(errs, errors.New(`"destination" is required: a local path, gs://bucket/key or file:///path`))
	}
	if in.Format != FormatNDJSON && in.Format != FormatGeoJSON {
		errs = append(errs, fmt.Errorf(`"format" is %q, want ndjson or geojson`, in.Format))
	}
	if in.BBox != nil {
		if len(in.BBox) != 4 {
			errs = append(errs, fmt.Errorf(`"bbox" has %d numbers, want 4: [min_lon, min_lat, max_lon, max_lat]`, len(in.BBox)))
		} else if in.BBox[0] > in.BBox[2] || in.BBox[1] > in.BBox[3] || math.IsNaN(in.BBox[0]+in.BBox[1]+in.BBox[2]+in.BBox[3]) {
			errs = append(errs, fmt.Errorf(`"bbox" %v is not [min_lon, min_lat, max_lon, max_lat] with min <= max`, in.BBox))
		}
	}
	return errs
}

// Handle implements the builtin handler signature. Every exported feature
// is reported (as a SUCCESS envelope carrying its identity), so the
// database reporter shows the export's progress.
func (h *Handler) Handle(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	in, err := ParseInputs(task.Inputs)
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	table, err := h.cfg.Store.TaskFeatureTable(ctx, task.SchemaName, in.CatalogID, in.CollectionID, "exporting")
	if err != nil {
		return nil, err
	}
	// The destination is written as the task's tenant: a local one only in
	// the tenant's folder under the roots.
	objs, err := h.cfg.Objects.Tenant(task.SchemaName)
	if err == nil {
		err = objs.Check(in.Destination)
	}
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	w, err := objs.Create(ctx, in.Destination, ContentType(in.Format))
	if err != nil {
		if errors.Is(err, objio.ErrInvalid) || errors.Is(err, objio.ErrForbidden) {
			return nil, wftype.Permanent(err)
		}
		return nil, err
	}
	defer w.Abort() // after a successful Close it does nothing
	n, err := h.write(ctx, table, in, w, rep)
	if err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return json.Marshal(Outputs{Table: table.String(), Destination: in.Destination, Format: in.Format, Features: n})
}

// write streams the selected features to w.
func (h *Handler) write(ctx context.Context, t store.FeatureTable, in Inputs, w io.Writer, rep reporters.Reporter) (int64, error) {
	fw, err := NewWriter(w, in.Format, nil)
	if err != nil {
		return 0, err
	}
	filter := store.FeatureFilter{AsOf: in.AsOf, BatchSize: h.cfg.BatchSize}
	if in.BBox != nil {
		filter.BBox = &[4]float64{in.BBox[0], in.BBox[1], in.BBox[2], in.BBox[3]}
	}
	n, err := h.cfg.Store.ScanFeatures(ctx, t, filter, func(r *store.FeatureRow) error {
		if err := fw.Write(r, nil); err != nil {
			return err
		}
		return rep.Report(ctx, reporters.Success(reporters.Record{
			Type: "Feature", ID: r.GeoID.String(),
			System: map[string]any{reporters.SystemGeoID: r.GeoID.String(), reporters.SystemExternalID: r.ExternalID},
		}))
	})
	if err != nil {
		return n, err
	}
	return n, fw.Close()
}

// exportSystem is the system member of an exported feature.
type exportSystem struct {
	GeoID           string  `json:"geoid"`
	ExternalID      string  `json:"external_id"`
	AssetID         *string `json:"asset_id,omitempty"`
	GeometryHash    string  `json:"geometry_hash"`
	AttributesHash  string  `json:"attributes_hash"`
	Validity        string  `json:"validity"`
	TransactionTime string  `json:"transaction_time"`
}

// AppendFeature appends one stored version as a GeoJSON Feature: its geoid
// as id, its geometry and properties, and the platform's stats and system
// members (foreign members, as in the per-record envelope's record).
func AppendFeature(dst []byte, r *store.FeatureRow) ([]byte, error) {
	sys, err := json.Marshal(exportSystem{
		GeoID: r.GeoID.String(), ExternalID: r.ExternalID, AssetID: r.AssetID,
		GeometryHash: r.GeometryHash, AttributesHash: r.AttributesHash,
		Validity:        store.ValidityLiteral(r.ValidFrom, r.ValidTo),
		TransactionTime: r.TransactionTime.Format(time.RFC3339Nano),
	})
	if err != nil {
		return nil, fmt.Errorf("error encoding feature %s: %w", r.ExternalID, err)
	}
	dst = append(dst, `{"type":"Feature","id":"`...)
	dst = append(dst, r.GeoID.String()...)
	dst = append(dst, `","geometry":`...)
	if dst, err = geom.GeoJSONFromWKB(dst, r.WKB); err != nil {
		return nil, fmt.Errorf("error encoding feature %s: %w", r.ExternalID, err)
	}
	dst = append(dst, `,"properties":`...)
	dst = append(dst, r.Properties...)
	dst = append(dst, `,"stats":`...)
	dst = append(dst, r.Stats...)
	dst = append(dst, `,"system":`...)
	dst = append(dst, sys...)
	return append(dst, '}'), nil
}
