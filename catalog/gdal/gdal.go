// Package gdal is the "gdal" builtin handler, the seed's GdalInfoTask: it
// describes one asset of a catalog (or a file the tenant names by URI) with
// GDAL's own tools and records what it found — driver, file size, CRS (WKT
// and EPSG code when known), extent in WGS84, and the bands of a raster or
// the layers of a vector source (geometry type, feature count, fields) — in
// the task's outputs and, for an asset, in the asset's metadata under
// "gdal".
//
// Rasters are read with `gdalinfo -json`. GDAL 3.6 has no `ogrinfo -json`,
// so vectors are read from `ogrinfo -ro -so -al -nomd -wkt_format WKT2`,
// whose text is parsed line by line (layer names and field names may hold
// ": " and parentheses; the WKT is read to its closing bracket), and each
// layer's extent is brought to WGS84 by `gdaltransform` along its densified
// edges (a projected rectangle is not a rectangle in degrees). This keeps
// every number GDAL's own: nothing of the source is decoded by wf.
//
// The source is staged and GDAL run as catalog/gdalcmd does it (a scratch
// copy per tenant, a process group killed on cancellation, no secrets in
// GDAL's environment).
package gdal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/wfhq/wf/catalog/gdalcmd"
	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// HandlerName is the builtin handler name of the gdal task type.
const HandlerName = "gdal"

// MetadataKey is the key of the asset's metadata that holds what the task
// found.
const MetadataKey = "gdal"

// Kinds of a described source.
const (
	KindRaster = "raster"
	KindVector = "vector"
)

// Config configures the handler.
type Config struct {
	// Store runs the statements, on a pool. Required.
	Store *store.Store
	// Emitter writes asset.updated; nil means events.NewEmitter(Store).
	Emitter *events.Emitter
	// Objects opens sources; nil means objio.New with the zero Config.
	Objects *objio.Opener
	// ScratchDir holds the copies GDAL reads, in a folder per tenant; ""
	// means <os temp dir>/wf-scratch.
	ScratchDir string
}

// Handler is the gdal handler; it holds no state between runs and is safe
// for concurrent use.
type Handler struct {
	cfg Config
}

// New validates cfg and returns the handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("error creating the gdal handler: the store is nil")
	}
	if cfg.Emitter == nil {
		cfg.Emitter = events.NewEmitter(cfg.Store)
	}
	cfg.Objects = objio.Or(cfg.Objects)
	return &Handler{cfg: cfg}, nil
}

// Inputs are a gdal task's inputs: a catalog and either one of its assets
// or a URI.
type Inputs struct {
	CatalogID string `json:"catalog_id"`
	// AssetID names the asset to describe; its metadata gets the result.
	AssetID string `json:"asset_id,omitempty"`
	// URI is a file to describe without an asset: a local path inside
	// files.local_roots, an http(s) URL or a gs:// object.
	URI string `json:"uri,omitempty"`
}

// ParseInputs decodes and checks a gdal task's inputs, strictly.
func ParseInputs(raw json.RawMessage) (Inputs, error) {
	return builtin.ParseInputs(raw, "gdal", (*Inputs).check)
}

// check lists what is wrong with in.
func (in *Inputs) check() (errs []error) {
	if in.CatalogID == "" {
		errs = append(errs, errors.New(`"catalog_id" is required`))
	}
	if (in.AssetID == "") == (in.URI == "") {
		errs = append(errs, errors.New(`give "asset_id" (an asset of the catalog) or "uri" (a file), one of them`))
	}
	if in.AssetID != "" && !registry.ValidAssetID(in.AssetID) {
		errs = append(errs, fmt.Errorf(`"asset_id" is %q, want %s`, in.AssetID, registry.AssetIDRule))
	}
	return errs
}

// Outputs are a gdal task's outputs.
type Outputs struct {
	CatalogID string `json:"catalog_id"`
	AssetID   string `json:"asset_id,omitempty"`
	// URI is the location read.
	URI  string `json:"uri"`
	Info Info   `json:"info"`
}

// Info is what GDAL says of a source.
type Info struct {
	// Kind is raster or vector.
	Kind string `json:"kind"`
	// Driver is GDAL's short name of the format (GTiff, GPKG, ESRI Shapefile).
	Driver string `json:"driver"`
	// FileSize is the source's size in bytes.
	FileSize int64 `json:"file_size"`
	// Size is a raster's width and height in pixels.
	Size []int `json:"size,omitempty"`
	// CRS is the raster's, or the first layer's with one; nil when unknown.
	CRS *CRS `json:"crs"`
	// ExtentWGS84 is [west, south, east, north] in degrees (for a vector
	// source, of all its layers); absent when it cannot be known (no CRS).
	ExtentWGS84 []float64 `json:"extent_wgs84,omitempty"`
	// Bands are a raster's bands.
	Bands []Band `json:"bands,omitempty"`
	// Layers are a vector source's layers.
	Layers []Layer `json:"layers,omitempty"`
}

// CRS is a coordinate reference system.
type CRS struct {
	// WKT is its OGC WKT2 definition.
	WKT string `json:"wkt"`
	// EPSG is its EPSG code, when it has one.
	EPSG int `json:"epsg,omitempty"`
}

// Band is one band of a raster.
type Band struct {
	Band int    `json:"band"`
	Type string `json:"type"`
	// ColorInterpretation is GDAL's (Gray, Red, Alpha, Undefined, …).
	ColorInterpretation string `json:"color_interpretation,omitempty"`
	Description         string `json:"description,omitempty"`
	// NoData is the band's no-data value (a number, or "nan"/"inf" as text).
	NoData any `json:"nodata,omitempty"`
}

// Layer is one layer of a vector source.
type Layer struct {
	Name string `json:"name"`
	// GeometryType is GDAL's (Point, Polygon, Multi Polygon, None, …).
	GeometryType string `json:"geometry_type"`
	// FeatureCount is the number of features (-1 when the driver cannot
	// count them).
	FeatureCount int64     `json:"feature_count"`
	CRS          *CRS      `json:"crs"`
	ExtentWGS84  []float64 `json:"extent_wgs84,omitempty"`
	Fields       []Field   `json:"fields"`
}

// Field is one attribute of a layer.
type Field struct {
	Name string `json:"name"`
	// Type is GDAL's (String, Integer, Integer64, Real, Date, DateTime,
	// Integer(Boolean), …).
	Type      string `json:"type"`
	Width     int    `json:"width"`
	Precision int    `json:"precision"`
	// NotNull is set when the source forbids nulls.
	NotNull bool `json:"not_null,omitempty"`
}

// Handle implements the builtin handler signature. Bad inputs, another
// tenant's catalog, an unknown or deleted asset and a source GDAL cannot
// read fail the task permanently; other errors are returned for a retry.
func (h *Handler) Handle(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	in, err := ParseInputs(task.Inputs)
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	cat, err := h.cfg.Store.GetCatalog(ctx, in.CatalogID)
	if err != nil {
		if errors.Is(err, wftype.ErrNotFound) {
			return nil, wftype.Permanent(fmt.Errorf("error describing with GDAL: %w", err))
		}
		return nil, err
	}
	if task.SchemaName != cat.SchemaName && task.SchemaName != wftype.SystemSchema {
		return nil, wftype.Permanent(fmt.Errorf("error describing with GDAL: the task belongs to tenant %q, catalog %q to %q",
			task.SchemaName, in.CatalogID, cat.SchemaName))
	}
	out := Outputs{CatalogID: in.CatalogID, AssetID: in.AssetID, URI: in.URI}
	kind := ""
	if in.AssetID != "" {
		a, err := h.cfg.Store.GetAsset(ctx, in.CatalogID, in.AssetID)
		if err != nil {
			if errors.Is(err, wftype.ErrNotFound) {
				return nil, wftype.Permanent(fmt.Errorf("error describing asset %q of catalog %q with GDAL: it does not exist", in.AssetID, in.CatalogID))
			}
			return nil, err
		}
		if a.Status == store.AssetDeleted {
			return nil, wftype.Permanent(fmt.Errorf("error describing asset %q of catalog %q with GDAL: it is deleted", in.AssetID, in.CatalogID))
		}
		out.URI, kind = a.URI, a.Kind
	}
	// The file is read as the catalog's tenant: a local one only from the
	// tenant's folder under the roots (an asset's URI too, whoever wrote it).
	objs, err := h.cfg.Objects.Tenant(cat.SchemaName)
	if err == nil {
		err = objs.Check(out.URI)
	}
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	if out.Info, err = h.describe(ctx, objs, cat.SchemaName, out.URI, kind); err != nil {
		return nil, err
	}
	if in.AssetID != "" {
		meta, err := json.Marshal(map[string]any{MetadataKey: out.Info})
		if err != nil {
			return nil, fmt.Errorf("error encoding the asset's metadata: %w", err)
		}
		_, err = registry.New(h.cfg.Store, h.cfg.Emitter).UpdateAsset(ctx, in.CatalogID, in.AssetID, store.AssetPatch{Metadata: meta})
		if errors.Is(err, wftype.ErrNotFound) {
			return nil, wftype.Permanent(err)
		}
		if err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("error encoding the gdal outputs: %w", err)
	}
	return b, nil
}

// describe stages uri, read through objs (the tenant's opener), in a scratch folder of tenant schema and reads it as
// a raster (gdalinfo) or a vector source (ogrinfo): as kind says, else a
// raster first and then a vector source.
func (h *Handler) describe(ctx context.Context, objs *objio.Opener, schema, uri, kind string) (Info, error) {
	for _, tool := range []string{"gdalinfo", "ogrinfo", "gdaltransform"} {
		if err := gdalcmd.Require(tool); err != nil {
			return Info{}, err
		}
	}
	s, err := gdalcmd.Stager{Objects: objs, ScratchDir: h.cfg.ScratchDir}.Stage(ctx, schema, "gdal", uri)
	if err != nil {
		return Info{}, err
	}
	defer s.Remove()
	st, err := os.Stat(s.File)
	if err != nil {
		return Info{}, fmt.Errorf("error reading the staged copy of %s: %w", uri, err)
	}
	var info Info
	switch kind {
	case store.AssetRaster:
		info, err = readRaster(ctx, s)
	case store.AssetVector:
		info, err = readVector(ctx, s)
	default:
		info, err = readRaster(ctx, s)
		if err != nil && wftype.IsPermanent(err) {
			var verr error
			if info, verr = readVector(ctx, s); verr != nil {
				if !wftype.IsPermanent(verr) {
					return Info{}, verr
				}
				return Info{}, wftype.Permanent(fmt.Errorf("error describing %s with GDAL: it is neither a raster nor a vector source GDAL reads (as a raster: %v; as a vector source: %v)",
					uri, err, verr))
			}
			err = nil
		}
	}
	if err != nil {
		if wftype.IsPermanent(err) {
			return Info{}, wftype.Permanent(fmt.Errorf("error describing %s with GDAL: %w", uri, err))
		}
		return Info{}, err
	}
	info.FileSize = st.Size()
	return info, nil
}

// epsgRE finds an EPSG identifier, WKT2 (ID["EPSG",32632]) or WKT1
// (AUTHORITY["EPSG","32632"]).
var epsgRE = regexp.MustCompile(`^(?:ID|AUTHORITY)\["EPSG",\s*"?(\d+)"?\]`)

// epsgOf returns the EPSG code of a WKT definition: the identifier of its
// root (at the first bracket level), not of a part such as its base CRS;
// 0 when it has none.
func epsgOf(wkt string) int {
	depth, quoted := 0, false
	for i := 0; i < len(wkt); i++ {
		switch c := wkt[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '[' || c == '(':
			depth++
		case c == ']' || c == ')':
			depth--
		case depth == 1 && (c == 'I' || c == 'A'):
			if i > 0 && isWordByte(wkt[i-1]) {
				continue
			}
			if m := epsgRE.FindStringSubmatch(wkt[i:]); m != nil {
				var code int
				if _, err := fmt.Sscan(m[1], &code); err == nil {
					return code
				}
			}
		}
	}
	return 0
}

func isWordByte(c byte) bool {
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}

// newCRS returns the CRS of a WKT definition, nil for none.
func newCRS(wkt string) *CRS {
	if wkt == "" {
		return nil
	}
	return &CRS{WKT: wkt, EPSG: epsgOf(wkt)}
}
