package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/paulmach/orb"

	"github.com/wfhq/wf/catalog/geom"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
)

// maxExternalID bounds an external id, in bytes.
const maxExternalID = 1024

// System keys the ingestion adds to the seed's (reporters.System*).
const (
	// systemChange says what the ingestion did: created, versioned or unchanged.
	systemChange = "change"
	// systemSourceIndex is a rejected record's 0-based position in the source.
	systemSourceIndex = "source_index"
	// systemSourceLine is a rejected record's 1-based line (ndjson, csv).
	systemSourceLine = "source_line"
)

// item is one processed record: a version to merge, or a rejection.
type item struct {
	// rejected is the envelope of a record refused before the merge.
	rejected *reporters.Envelope
	// version is what is merged; props, stats and geometry make its envelope.
	version store.FeatureVersion
	// geometry is the canonical GeoJSON of the version's geometry (the
	// table stores it once, as geom; the envelope shows it as GeoJSON).
	geometry []byte
	props    map[string]any
	stats    recordStats
}

// recordStats are a record's stats, the seed's four groups in one flat
// object (see schemas/envelope.schema.json): geometry stats, attribute
// stats, content hashes and spatial cells.
type recordStats struct {
	geom.Stats
	// Fields and Nulls count the record's properties and those that are null.
	Fields, Nulls int
	// GeometryHash and AttributesHash are the content hashes.
	GeometryHash, AttributesHash string
	// S2Cell is the token of the S2 cell of the centroid at S2Level.
	S2Cell  string
	S2Level int
	// Centroid is the centroid as hex WKB (geom.Stats.CentroidHex), made
	// once for the stored stats and the envelope.
	Centroid string
}

// processor turns records into items; it holds the run's fixed values.
type processor struct {
	idAttribute string
	assetID     *string
	validFrom   time.Time
	// s2Level is the level of the centroid's S2 cell in the stats.
	s2Level int
	// mapping, when set, maps the attributes after the external id is
	// read from them.
	mapping *AttributeMapping
}

// reject returns the item of a refused record: its attributes echoed,
// whatever identity was derived, and where it is in the source.
func (p *processor) reject(rec *record, props map[string]any, system map[string]any, echoGeometry json.RawMessage, reason string) item {
	if system == nil {
		system = map[string]any{}
	}
	system[systemSourceIndex] = rec.index
	if rec.line > 0 {
		system[systemSourceLine] = rec.line
	}
	env := reporters.Rejected(props, system, reason)
	env.Record.Geometry = echoable(echoGeometry)
	return item{rejected: &env}
}

// process checks and measures one record. It is safe for concurrent use;
// the version's GeoID is left for the caller to give, in source order.
func (p *processor) process(rec *record) item {
	props, stored, propsErr := rec.attributes()
	if rec.err != nil {
		return p.reject(rec, props, nil, nil, rec.err.Error())
	}
	if propsErr != nil {
		return p.reject(rec, nil, nil, nil, propsErr.Error())
	}
	// The system members of a rejection: built only for one.
	var extID string
	system := func() map[string]any {
		m := map[string]any{}
		if p.assetID != nil {
			m[reporters.SystemAssetID] = *p.assetID
		}
		if extID != "" {
			m[reporters.SystemExternalID] = extID
		}
		return m
	}
	extID, err := p.externalID(rec, props)
	if err != nil {
		return p.reject(rec, props, system(), nil, err.Error())
	}
	if p.mapping != nil {
		mapped, text, err := p.mapping.apply(props)
		if err != nil {
			return p.reject(rec, props, system(), nil, err.Error())
		}
		props, stored = mapped, text
	}

	g, echo, err := rec.parseGeometry()
	if err == nil {
		err = geom.Validate(g)
	}
	if err != nil {
		return p.reject(rec, props, system(), echo, "invalid geometry: "+err.Error())
	}
	g = geom.Normalize(g)
	wkb, err := geom.WKB(g)
	if err != nil {
		return p.reject(rec, props, system(), echo, "invalid geometry: "+err.Error())
	}
	canon, err := appendCanonicalJSON(make([]byte, 0, len(stored)+32), props)
	if err != nil {
		return p.reject(rec, props, system(), echo, err.Error())
	}
	stats := recordStats{Stats: geom.Measure(g), Fields: len(props), GeometryHash: geom.Hash(wkb), AttributesHash: geom.Hash(canon),
		S2Level: p.s2Level}
	for _, v := range props {
		if v == nil {
			stats.Nulls++
		}
	}
	stats.S2Cell = stats.Stats.S2Cell(p.s2Level)
	stats.Centroid = stats.CentroidHex()
	version := store.FeatureVersion{
		ExternalID:     extID,
		AssetID:        p.assetID,
		WKB:            wkb,
		Properties:     stored,
		Stats:          appendStatsJSON(make([]byte, 0, 320), stats),
		GeometryHash:   stats.GeometryHash,
		AttributesHash: stats.AttributesHash,
		ValidFrom:      p.validFrom,
	}
	// Encoded here, on a worker: the merge only sends it.
	if err := store.EncodeCopyRow(&version); err != nil {
		return p.reject(rec, props, system(), echo, "invalid geometry: "+err.Error())
	}
	return item{
		version: version,
		// About 22 bytes a vertex: sized once, not grown.
		geometry: geom.AppendGeoJSON(make([]byte, 0, 48+22*stats.Vertices), g),
		props:    props,
		stats:    stats,
	}
}

// attributes returns a record's attributes as a map (numbers as
// json.Number) and as the JSON text to store, or why they are not a JSON
// object. Attributes written with bare NaN or Infinity (as Python's json
// module writes them) are read with those words quoted.
func (rec *record) attributes() (map[string]any, []byte, error) {
	if rec.attrs != nil {
		b, err := json.Marshal(rec.attrs)
		if err != nil {
			return nil, nil, fmt.Errorf("error encoding the attributes: %w", err)
		}
		return rec.attrs, b, nil
	}
	raw := bytes.TrimSpace(rec.properties)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, []byte("{}"), nil
	}
	if raw[0] != '{' {
		return nil, nil, errors.New(`the feature's "properties" is not a JSON object`)
	}
	if m, ok := decodeFlatObject(raw); ok {
		return m, raw, nil
	}
	m, err := decodeObject(raw)
	if err != nil {
		if fixed := quoteNonFinite(raw); fixed != nil {
			if m, ferr := decodeObject(fixed); ferr == nil {
				return m, fixed, nil
			}
		}
		return nil, nil, fmt.Errorf(`the feature's "properties" cannot be read: %w`, err)
	}
	return m, raw, nil
}

// decodeObject decodes a JSON object with numbers as json.Number.
func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the object")
	}
	return m, nil
}

// quoteNonFinite returns b with its bare words quoted (geom.NonFiniteReader),
// or nil when that changes nothing.
func quoteNonFinite(b []byte) []byte {
	fixed, err := io.ReadAll(geom.NonFiniteReader(bytes.NewReader(b)))
	if err != nil || bytes.Equal(fixed, b) {
		return nil
	}
	return fixed
}

// echoable returns raw as it can be echoed in an envelope: as it is when it
// is valid JSON, with its bare words quoted when that makes it valid, else nil.
func echoable(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || json.Valid(raw) {
		return raw
	}
	if fixed := quoteNonFinite(raw); fixed != nil && json.Valid(fixed) {
		return fixed
	}
	return nil
}

// parseGeometry returns a record's geometry and, for a GeoJSON geometry
// that has a known type and the right nesting (only its values may be
// wrong), its text to echo in a rejection (see echoable).
func (rec *record) parseGeometry() (orb.Geometry, json.RawMessage, error) {
	if rec.attrs != nil {
		return rec.geom, nil, rec.geomErr
	}
	g, err := geom.ParseGeoJSON(rec.geometry)
	if err != nil {
		return nil, nil, err
	}
	return g, rec.geometry, nil
}

// externalID finds a record's external id: the id attribute, or a GeoJSON
// feature's own id when the attribute is "id" and absent.
func (p *processor) externalID(rec *record, props map[string]any) (string, error) {
	v, ok := props[p.idAttribute]
	if !ok && p.idAttribute == "id" && len(rec.featureID) > 0 {
		dec := json.NewDecoder(bytes.NewReader(rec.featureID))
		dec.UseNumber()
		if err := dec.Decode(&v); err == nil {
			ok = v != nil
		}
	}
	if !ok || v == nil {
		return "", fmt.Errorf("the id attribute %q is missing", p.idAttribute)
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case json.Number:
		s = v.String()
	default:
		return "", fmt.Errorf("the id attribute %q is %s, want a string or a number", p.idAttribute, jsonKind(v))
	}
	switch {
	case s == "":
		return "", fmt.Errorf("the id attribute %q is empty", p.idAttribute)
	case len(s) > maxExternalID:
		return "", fmt.Errorf("the id attribute %q is %d bytes long, want at most %d", p.idAttribute, len(s), maxExternalID)
	}
	return s, nil
}

// jsonKind names the JSON kind of a decoded value, with its article, for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}

// appendStatsJSON appends the stored stats object: the envelope's stats
// (statsMap), in the same keys, but for the content hashes, which the
// table stores once, in their own columns (its readers add them back).
func appendStatsJSON(dst []byte, s recordStats) []byte {
	num := func(key string, v float64) {
		dst = append(dst, `,"`...)
		dst = append(dst, key...)
		dst = append(dst, `":`...)
		dst = strconv.AppendFloat(dst, v, 'f', -1, 64)
	}
	str := func(key, v string) {
		dst = append(dst, `,"`...)
		dst = append(dst, key...)
		dst = append(dst, `":"`...)
		dst = append(dst, v...) // hex digits and tokens: nothing to escape
		dst = append(dst, '"')
	}
	dst = append(dst, `{"area":`...)
	dst = strconv.AppendFloat(dst, s.Area, 'f', -1, 64)
	num(statLength, s.Length)
	str(statCentroid, s.Centroid)
	dst = append(dst, `,"bbox":[`...)
	for i, v := range s.BBox {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, v, 'f', -1, 64)
	}
	dst = append(dst, ']')
	num(statVertexCount, float64(s.Vertices))
	num(statPartCount, float64(s.Parts))
	num(statFieldCount, float64(s.Fields))
	num(statNullCount, float64(s.Nulls))
	str(statS2Cell, s.S2Cell)
	num(statS2Level, float64(s.S2Level))
	return append(dst, '}')
}

// The envelope's stats keys, by the seed's groups.
const (
	// geometry_stats
	statArea        = "area"
	statLength      = "length"
	statCentroid    = "centroid"
	statBBox        = "bbox"
	statVertexCount = "vertex_count"
	statPartCount   = "part_count"
	// attribute_stats
	statFieldCount = "field_count"
	statNullCount  = "null_count"
	// content_hashes
	statGeometryHash   = "geometry_hash"
	statAttributesHash = "attributes_hash"
	// spatial_cells
	statS2Cell  = "s2_cell"
	statS2Level = "s2_level"
)

// statsMap is the envelope's stats member.
func statsMap(s recordStats) map[string]any {
	return map[string]any{
		statArea:           s.Area,
		statLength:         s.Length,
		statCentroid:       s.Centroid,
		statBBox:           []float64{s.BBox[0], s.BBox[1], s.BBox[2], s.BBox[3]},
		statVertexCount:    s.Vertices,
		statPartCount:      s.Parts,
		statFieldCount:     s.Fields,
		statNullCount:      s.Nulls,
		statGeometryHash:   s.GeometryHash,
		statAttributesHash: s.AttributesHash,
		statS2Cell:         s.S2Cell,
		statS2Level:        s.S2Level,
	}
}

// envelope returns the report of a merged item.
func (it *item) envelope(o store.MergeOutcome) reporters.Envelope {
	v := &it.version
	system := map[string]any{
		reporters.SystemExternalID:     v.ExternalID,
		reporters.SystemGeometryHash:   v.GeometryHash,
		reporters.SystemAttributesHash: v.AttributesHash,
	}
	if v.AssetID != nil {
		system[reporters.SystemAssetID] = *v.AssetID
	}
	if o.Action == store.MergeInvalid {
		env := reporters.Rejected(it.props, system, "invalid geometry: "+o.Reason)
		env.Record.Geometry = it.geometry
		return env
	}
	if o.Action == store.MergeConflict {
		reason := fmt.Sprintf("external id %q: the validity start %s is not after the start %s of its current version, which has other content",
			v.ExternalID, v.ValidFrom.UTC().Format(time.RFC3339Nano), o.ValidFrom.Format(time.RFC3339Nano))
		env := reporters.Rejected(it.props, system, reason)
		env.Record.Geometry = it.geometry
		return env
	}
	system[reporters.SystemGeoID] = o.GeoID.String()
	system[reporters.SystemValidity] = store.ValidityLiteral(o.ValidFrom, nil)
	system[reporters.SystemTransactionTime] = o.TransactionTime.Format(time.RFC3339Nano)
	system[systemChange] = string(o.Action)
	return reporters.Success(reporters.Record{
		Type:       "Feature",
		ID:         o.GeoID.String(),
		Geometry:   it.geometry,
		Properties: it.props,
		Stats:      statsMap(it.stats),
		System:     system,
	})
}
