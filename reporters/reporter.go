// Package reporters holds the per-record envelope that every task handler
// reports its results in, and the Reporter interface the engine builds from a
// task type's spec (database counts, a detailed GCS report, or both).
package reporters

import (
	"context"
	"encoding/json"
)

// RecordStatus is the outcome of one record.
type RecordStatus string

// Record outcomes.
const (
	RecordSuccess  RecordStatus = "SUCCESS"
	RecordRejected RecordStatus = "REJECTED"
	RecordFailed   RecordStatus = "FAILED"
)

// Envelope is the seed's per-record result: the outcome, an optional message
// and the record itself.
type Envelope struct {
	Status  RecordStatus `json:"status"`
	Message *string      `json:"message"`
	Record  Record       `json:"record"`
}

// Record is the body of an envelope. Stats and System are always present
// (possibly empty); absent keys inside them are omitted.
type Record struct {
	Type       string          `json:"type"`
	ID         string          `json:"id,omitempty"`
	Geometry   json.RawMessage `json:"geometry,omitempty"`
	Properties map[string]any  `json:"properties"`
	Stats      map[string]any  `json:"stats"`
	System     map[string]any  `json:"system"`
}

// Reporter receives the per-record results of one task run.
type Reporter interface {
	// Report records one envelope. Implementations batch; Report must not do
	// one write per record.
	Report(ctx context.Context, env Envelope) error
	// Finish flushes what is buffered when the task ends and returns what the
	// reporter adds to the task's outputs (for example a report URL), or nil.
	Finish(ctx context.Context) (map[string]any, error)
}

// Discard is a Reporter that drops every record; for tasks whose spec names no reporter.
type Discard struct{}

// Report implements Reporter.
func (Discard) Report(context.Context, Envelope) error { return nil }

// Finish implements Reporter.
func (Discard) Finish(context.Context) (map[string]any, error) { return nil, nil }
