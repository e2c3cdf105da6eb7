package reporters

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// RecordStatus is the outcome of one record.
type RecordStatus string

// Record outcomes.
const (
	// RecordSuccess: the record was processed and stored.
	RecordSuccess RecordStatus = "SUCCESS"
	// RecordRejected: the input was invalid; the record echoes it.
	RecordRejected RecordStatus = "REJECTED"
	// RecordFailed: a valid input could not be processed.
	RecordFailed RecordStatus = "FAILED"
)

// Valid reports whether s is one of the three record outcomes.
func (s RecordStatus) Valid() bool {
	switch s {
	case RecordSuccess, RecordRejected, RecordFailed:
		return true
	}
	return false
}

// The known keys of Record.System (schemas/envelope.schema.json describes
// them); other keys are allowed.
const (
	SystemGeoID           = "geoid"
	SystemExternalID      = "external_id"
	SystemAssetID         = "asset_id"
	SystemGeometryHash    = "geometry_hash"
	SystemAttributesHash  = "attributes_hash"
	SystemValidity        = "validity"
	SystemTransactionTime = "transaction_time"
	SystemDeletedAt       = "deleted_at"
)

// Envelope is the seed's per-record result: the outcome, an optional message
// and the record itself. Its JSON form is schemas/envelope.schema.json.
type Envelope struct {
	Status RecordStatus `json:"status"`
	// Message says why a record was rejected or failed; nil (JSON null) on success.
	Message *string `json:"message"`
	Record  Record  `json:"record"`
}

// Record is the body of an envelope: a GeoJSON-like feature with the
// platform's stats and system members.
//
// Properties, Stats and System always marshal as JSON objects, never null,
// so a report has a predictable shape; absent keys inside them are omitted.
// Geometry marshals as null when it is empty. When a Record is decoded,
// numbers inside the maps become json.Number, so that a rejection echoes its
// input exactly (no float64 rounding of large integers).
type Record struct {
	// Type is the kind of record, usually "Feature".
	Type string `json:"type"`
	// ID is the record's identifier; empty means none.
	ID string `json:"id,omitempty"`
	// Geometry is a GeoJSON geometry object; nil means none (JSON null).
	Geometry json.RawMessage `json:"geometry"`
	// Properties holds user attributes only.
	Properties map[string]any `json:"properties"`
	// Stats holds flat, platform-derived values; empty for a rejection.
	Stats map[string]any `json:"stats"`
	// System holds identity and lifecycle (see the System* keys).
	System map[string]any `json:"system"`
}

// plainRecord has Record's fields and none of its methods, so that its
// marshalling does not recurse.
type plainRecord Record

// MarshalJSON writes the record with properties, stats and system as
// objects even when their maps are nil.
func (r Record) MarshalJSON() ([]byte, error) {
	p := plainRecord(r.normalized())
	return json.Marshal(p)
}

// UnmarshalJSON reads a record, with numbers inside its maps as
// json.Number, a null geometry as nil and absent maps as empty ones.
func (r *Record) UnmarshalJSON(b []byte) error {
	var p plainRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("error decoding a record: %w", err)
	}
	*r = Record(p).normalized()
	return nil
}

// normalized returns r with empty maps in place of nil ones and a nil
// geometry in place of JSON null.
func (r Record) normalized() Record {
	if r.Properties == nil {
		r.Properties = map[string]any{}
	}
	if r.Stats == nil {
		r.Stats = map[string]any{}
	}
	if r.System == nil {
		r.System = map[string]any{}
	}
	if g := bytes.TrimSpace(r.Geometry); len(g) == 0 || string(g) == "null" {
		r.Geometry = nil
	}
	return r
}

// Success returns the envelope of a record that was processed and stored.
// Nil maps in the record become empty ones.
func Success(record Record) Envelope {
	return Envelope{Status: RecordSuccess, Record: record.normalized()}
}

// Rejected returns the envelope of an invalid input: the record is a
// Feature whose properties echo the offending input, whose system carries
// whichever identity fields were derived (nil for none) and whose stats are
// empty. Its id is the derived geoid, when there is one.
func Rejected(input map[string]any, system map[string]any, reason string) Envelope {
	rec := Record{Type: "Feature", Properties: input, System: system}
	if id, ok := system[SystemGeoID].(string); ok {
		rec.ID = id
	}
	return Envelope{Status: RecordRejected, Message: &reason, Record: rec.normalized()}
}

// Failed returns the envelope of a valid record that could not be
// processed, with the reason.
func Failed(record Record, reason string) Envelope {
	return Envelope{Status: RecordFailed, Message: &reason, Record: record.normalized()}
}
