package ingest

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"sort"
)

// maxSummaryFields bounds the fields a summary describes, so a source
// whose records all have different attribute names cannot grow it without
// bound.
const maxSummaryFields = 1000

// Summary describes the stored records of one ingestion as a collection:
// the ingestion's outputs carry it.
type Summary struct {
	// Count is the records stored (created, versioned or unchanged).
	Count int64 `json:"count"`
	// Extent is [west, south, east, north] of their bounding boxes; a
	// record that crosses the antimeridian widens it to every longitude.
	Extent []float64 `json:"extent,omitempty"`
	// Fields are the attributes, by name.
	Fields map[string]FieldSummary `json:"fields"`
	// FieldsTruncated says that more than 1000 attribute names were seen
	// and the others are not described.
	FieldsTruncated bool `json:"fields_truncated,omitempty"`
}

// FieldSummary describes one attribute across the stored records.
type FieldSummary struct {
	// Types are the JSON types of its values: string, number, boolean,
	// object, array (sorted; null is counted in Nulls).
	Types []string `json:"types"`
	// Nulls counts the records where it is null or absent.
	Nulls int64 `json:"nulls"`
}

// summarizer accumulates a Summary.
type summarizer struct {
	count      int64
	w, s, e, n float64
	fields     map[string]*fieldAcc
	truncated  bool
}

// fieldAcc accumulates one field: the types seen, and the records where it
// has a value (present) or null.
type fieldAcc struct {
	types   map[string]bool
	present int64 // records with a non-null value
}

func newSummarizer() *summarizer {
	return &summarizer{w: math.Inf(1), s: math.Inf(1), e: math.Inf(-1), n: math.Inf(-1), fields: map[string]*fieldAcc{}}
}

// add counts one stored record.
func (z *summarizer) add(props map[string]any, bbox [4]float64) {
	z.count++
	w, e := bbox[0], bbox[2]
	if w > e {
		w, e = -180, 180
	}
	z.w, z.s, z.e, z.n = min(z.w, w), min(z.s, bbox[1]), max(z.e, e), max(z.n, bbox[3])
	for k, v := range props {
		f := z.fields[k]
		if f == nil {
			if len(z.fields) >= maxSummaryFields {
				z.truncated = true
				continue
			}
			f = &fieldAcc{types: map[string]bool{}}
			z.fields[k] = f
		}
		if v == nil {
			continue
		}
		f.present++
		f.types[jsonType(v)] = true
	}
}

// summary returns what was accumulated.
func (z *summarizer) summary() Summary {
	out := Summary{Count: z.count, Fields: make(map[string]FieldSummary, len(z.fields)), FieldsTruncated: z.truncated}
	if z.count > 0 {
		out.Extent = []float64{z.w, z.s, z.e, z.n}
	}
	for k, f := range z.fields {
		types := slices.Collect(maps.Keys(f.types))
		sort.Strings(types)
		if types == nil {
			types = []string{}
		}
		out.Fields[k] = FieldSummary{Types: types, Nulls: z.count - f.present}
	}
	return out
}

// jsonType names the JSON type of a decoded value (numbers are json.Number).
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "unknown"
}
