package wftype

import (
	"context"

	"github.com/google/uuid"
)

// sourceTaskKey keys the running task's id in a context.
type sourceTaskKey struct{}

// WithSourceTask returns ctx carrying the id of the task being run, so
// that events emitted in it record that task as their source (the task's
// page lists the events it emitted). engine/execution sets it for every
// run.
func WithSourceTask(ctx context.Context, id uuid.UUID) context.Context {
	return context.WithValue(ctx, sourceTaskKey{}, id)
}

// SourceTask returns the id of the task being run in ctx, if any.
func SourceTask(ctx context.Context) (uuid.UUID, bool) {
	id, ok := ctx.Value(sourceTaskKey{}).(uuid.UUID)
	return id, ok && id != uuid.Nil
}
