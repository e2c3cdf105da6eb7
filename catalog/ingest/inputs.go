package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/wfhq/wf/runners/builtin"
)

// Formats of a source.
const (
	// FormatGeoJSON is a GeoJSON FeatureCollection (RFC 7946).
	FormatGeoJSON = "geojson"
	// FormatNDJSON is one GeoJSON Feature per line.
	FormatNDJSON = "ndjson"
	// FormatCSV is comma-separated values with a header row and the
	// geometry in a WKT column or in longitude and latitude columns.
	FormatCSV = "csv"
	// FormatGDAL is any vector source GDAL reads (Shapefile, zipped
	// Shapefile, GeoPackage, FlatGeobuf, KML, GML, GPX, …), reprojected to
	// WGS84 by ogr2ogr.
	FormatGDAL = "gdal"
)

// DefaultS2Level is the level of the S2 cells in the records' stats: level
// 13 cells are about 1 km² (0.6 to 1.2 km² by latitude).
const DefaultS2Level = 13

// Inputs are an ingestion task's inputs (specs/ingestion.yaml validates
// them first; Parse checks them again for tasks created by other means).
type Inputs struct {
	// CatalogID and CollectionID name the destination collection.
	CatalogID    string `json:"catalog_id"`
	CollectionID string `json:"collection_id"`
	// Source is a local path or an http(s)://, gs:// or file:// URL.
	Source string `json:"source"`
	// Format is geojson, ndjson or csv.
	Format string `json:"format"`
	// IDAttribute is the property holding each record's external id. When
	// it is "id" and a GeoJSON feature has no such property, the feature's
	// own "id" member is used.
	IDAttribute string `json:"id_attribute"`
	// AssetID is the asset the records belong to; optional.
	AssetID string `json:"asset_id,omitempty"`
	// ValidityStart starts the validity of the versions written; the
	// default is the task's creation time (stable across retries).
	ValidityStart *time.Time `json:"validity_start,omitempty"`
	// CSV configures the csv format.
	CSV *CSVOptions `json:"csv,omitempty"`
	// Layer names the layer of a gdal source with several; optional.
	Layer string `json:"layer,omitempty"`
	// S2Level is the level of the S2 cell of each record's centroid in its
	// stats (0 to 30); default DefaultS2Level.
	S2Level *int `json:"s2_level,omitempty"`
	// SourceCRS is a gdal source's coordinate reference system as
	// AUTHORITY:CODE (EPSG:32632), for a source that does not say it or
	// says it wrongly; optional.
	SourceCRS string `json:"source_crs,omitempty"`
	// Attributes selects, renames and casts the attributes stored;
	// optional.
	Attributes *AttributeMapping `json:"attributes,omitempty"`
}

// CSVOptions say where a CSV source keeps its geometry. With neither
// WKTColumn nor LonColumn/LatColumn set, a column named wkt, geometry or
// geom (any case) is taken as WKT, else columns named lon/lng/longitude/x
// and lat/latitude/y as a point.
type CSVOptions struct {
	WKTColumn string `json:"wkt_column,omitempty"`
	LonColumn string `json:"lon_column,omitempty"`
	LatColumn string `json:"lat_column,omitempty"`
	// Delimiter is the field separator, one character; default ",".
	Delimiter string `json:"delimiter,omitempty"`
}

// ParseInputs decodes and checks an ingestion task's inputs, strictly:
// unknown fields are errors.
func ParseInputs(raw json.RawMessage) (Inputs, error) {
	return builtin.ParseInputs(raw, "ingestion", (*Inputs).check)
}

// check lists what is wrong with in.
func (in *Inputs) check() (errs []error) {
	if in.CatalogID == "" || in.CollectionID == "" {
		errs = append(errs, errors.New(`"catalog_id" and "collection_id" are required`))
	}
	if in.Source == "" {
		errs = append(errs, errors.New(`"source" is required: a local path or an http(s)://, gs:// or file:// URL`))
	}
	switch in.Format {
	case FormatGeoJSON, FormatNDJSON, FormatCSV, FormatGDAL:
	default:
		errs = append(errs, fmt.Errorf(`"format" is %q, want geojson, ndjson, csv or gdal`, in.Format))
	}
	if in.Format != FormatGDAL && (in.Layer != "" || in.SourceCRS != "") {
		errs = append(errs, errors.New(`"layer" and "source_crs" apply to format gdal only`))
	}
	if in.SourceCRS != "" && !sourceCRSRE.MatchString(in.SourceCRS) {
		errs = append(errs, fmt.Errorf(`"source_crs" is %q, want an authority and a code such as EPSG:32632`, in.SourceCRS))
	}
	if in.Layer != "" && (strings.HasPrefix(in.Layer, "-") || strings.ContainsFunc(in.Layer, unicode.IsControl) || len(in.Layer) > 255) {
		errs = append(errs, fmt.Errorf(`"layer" is %q, want a layer name (up to 255 characters, not starting with '-')`, in.Layer))
	}
	if in.S2Level != nil && (*in.S2Level < 0 || *in.S2Level > 30) {
		errs = append(errs, fmt.Errorf(`"s2_level" is %d, want 0 to 30`, *in.S2Level))
	}
	if in.IDAttribute == "" {
		errs = append(errs, errors.New(`"id_attribute" is required: the property that holds each record's external id`))
	}
	if in.Attributes != nil {
		errs = append(errs, in.Attributes.check()...)
	}
	if in.CSV != nil {
		if in.Format != FormatCSV {
			errs = append(errs, errors.New(`"csv" applies to format csv only`))
		}
		if (in.CSV.LonColumn == "") != (in.CSV.LatColumn == "") {
			errs = append(errs, errors.New(`"csv": "lon_column" and "lat_column" go together`))
		}
		if in.CSV.WKTColumn != "" && in.CSV.LonColumn != "" {
			errs = append(errs, errors.New(`"csv": give "wkt_column" or "lon_column"/"lat_column", not both`))
		}
		if d := []rune(in.CSV.Delimiter); len(d) > 1 || (len(d) == 1 && (d[0] == '"' || d[0] == '\n' || d[0] == '\r')) {
			errs = append(errs, fmt.Errorf(`"csv": "delimiter" is %q, want one character other than a quote or a line break`, in.CSV.Delimiter))
		}
	}
	return errs
}
