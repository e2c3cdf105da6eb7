// Package reporters holds the per-record envelope that every task handler
// reports its results in, and the Reporter interface the engine builds from a
// task type's spec (database counts, a detailed GCS report, or both).
//
// The envelope's contract is schemas/envelope.schema.json; ValidateEnvelope
// checks a JSON line against it. The reporters themselves live in
// sub-packages (dbreporter, gcsreporter), which the engine combines through a
// Factory; reportertest is the one suite every reporter passes.
//
// Dependencies point one way: the engine imports reporters, never the
// reverse, so the few engine facts a reporter needs travel in TaskInfo.
package reporters

import (
	"context"
	"errors"

	"github.com/google/uuid"
)

// Reporter receives the per-record results of one task run.
//
// The contract, checked for every implementation by reportertest:
//   - Report is cheap (no write per record) and safe for concurrent calls.
//   - Finish flushes what is left, synchronously, and returns what the
//     reporter adds to the task's outputs. It honours its context: a
//     cancelled context makes it return an error wrapping the context's.
//   - Once Finish has been called, Report returns ErrFinished.
//   - Finish may be called again: after a failure it retries, after a
//     success it returns the same outputs without writing anything again.
//   - A reporter holds no resources (goroutines, files, connections) before
//     its first Report, so one that is dropped unused leaks nothing; once it
//     has received a record, Finish must be called.
type Reporter interface {
	// Report records one envelope. Implementations batch; Report must not do
	// one write per record.
	Report(ctx context.Context, env Envelope) error
	// Finish flushes what is buffered when the task ends and returns what the
	// reporter adds to the task's outputs (for example a report URL), or nil.
	Finish(ctx context.Context) (map[string]any, error)
}

// ErrFinished is returned by Report once Finish has been called: a record
// that arrives after the report was closed would be lost silently otherwise.
var ErrFinished = errors.New("the reporter is finished")

// TaskInfo is what a reporter knows of the task whose records it receives:
// its identity, without importing the engine's row type.
type TaskInfo struct {
	// ID is the task's UUIDv7.
	ID uuid.UUID
	// SchemaName is the tenant schema of the task ("system" for platform tasks).
	SchemaName string
	// TaskType is the name of the task's type.
	TaskType string
}

// Discard is a Reporter that drops every record; for tasks whose spec names no reporter.
type Discard struct{}

// Report implements Reporter.
func (Discard) Report(context.Context, Envelope) error { return nil }

// Finish implements Reporter.
func (Discard) Finish(context.Context) (map[string]any, error) { return nil, nil }
