package export

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"

	"github.com/paulmach/orb/encoding/wkb"
	"github.com/paulmach/orb/encoding/wkt"

	"github.com/wfhq/wf/engine/store"
)

// FormatCSV writes one row per feature: geoid, external_id, the geometry
// as WKT, the writer's extra columns, and the properties as a JSON object.
const FormatCSV = "csv"

// ContentType returns the media type of a format's objects.
func ContentType(format string) string {
	switch format {
	case FormatGeoJSON:
		return "application/geo+json"
	case FormatCSV:
		return "text/csv"
	default:
		return "application/x-ndjson"
	}
}

// Writer streams features in one format through a buffer: NDJSON (one
// Feature a line), GeoJSON (one FeatureCollection) or CSV (a header, then
// a row a feature). Nothing but the buffer is held, so memory does not
// grow with the number of features. It is not safe for concurrent use.
type Writer struct {
	bw     *bufio.Writer
	format string
	csv    *csv.Writer
	extra  int
	n      int64
	line   []byte
}

// NewWriter starts writing features to w in format (ndjson, geojson or
// csv). extraColumns name the columns a CSV row has between the geometry
// and the properties; Write takes their values in that order.
func NewWriter(w io.Writer, format string, extraColumns []string) (*Writer, error) {
	fw := &Writer{bw: bufio.NewWriterSize(w, 256<<10), format: format, extra: len(extraColumns)}
	switch format {
	case FormatNDJSON:
	case FormatGeoJSON:
		if _, err := fw.bw.WriteString(`{"type":"FeatureCollection","features":[` + "\n"); err != nil {
			return nil, err
		}
	case FormatCSV:
		fw.csv = csv.NewWriter(fw.bw)
		header := append([]string{"geoid", "external_id", "wkt"}, extraColumns...)
		if err := fw.csv.Write(append(header, "properties")); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown format %q, want ndjson, geojson or csv", format)
	}
	return fw, nil
}

// Write writes one feature version; extra are its CSV extra column values
// (ignored by the other formats, whose properties hold everything).
func (w *Writer) Write(r *store.FeatureRow, extra []string) error {
	if w.csv != nil {
		g, err := wkb.Unmarshal(r.WKB)
		if err != nil {
			return fmt.Errorf("error reading the geometry of feature %s: %w", r.ExternalID, err)
		}
		if len(extra) != w.extra {
			return fmt.Errorf("error writing feature %s: %d extra values for %d columns", r.ExternalID, len(extra), w.extra)
		}
		row := append([]string{r.GeoID.String(), r.ExternalID, wkt.MarshalString(g)}, extra...)
		w.n++
		return w.csv.Write(append(row, string(r.Properties)))
	}
	var err error
	if w.line, err = AppendFeature(w.line[:0], r); err != nil {
		return err
	}
	if w.format == FormatGeoJSON && w.n > 0 {
		if _, err := w.bw.WriteString(",\n"); err != nil {
			return err
		}
	}
	if w.format == FormatNDJSON {
		w.line = append(w.line, '\n')
	}
	w.n++
	_, err = w.bw.Write(w.line)
	return err
}

// Count returns how many features were written.
func (w *Writer) Count() int64 { return w.n }

// Close ends the document and flushes the buffer; it does not close the
// underlying writer.
func (w *Writer) Close() error {
	switch {
	case w.csv != nil:
		w.csv.Flush()
		if err := w.csv.Error(); err != nil {
			return err
		}
	case w.format == FormatGeoJSON:
		if _, err := w.bw.WriteString("\n]}\n"); err != nil {
			return err
		}
	}
	return w.bw.Flush()
}
