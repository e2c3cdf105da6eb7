package reporters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// The reporter names a task type's spec may list.
const (
	// NameDatabase counts records into the task's progress (dbreporter).
	NameDatabase = "database"
	// NameGCSDetailed writes every envelope to one object per task (gcsreporter).
	NameGCSDetailed = "gcs_detailed"
)

// Builder makes the reporter of one kind for one task run. A Builder that
// holds resources (an open bucket) also implements io.Closer; Factory.Close
// closes it.
type Builder interface {
	NewReporter(task TaskInfo) (Reporter, error)
}

// BuilderFunc adapts a function to a Builder.
type BuilderFunc func(task TaskInfo) (Reporter, error)

// NewReporter implements Builder.
func (f BuilderFunc) NewReporter(task TaskInfo) (Reporter, error) { return f(task) }

// Factory builds the reporter of each task run from the reporter names in
// its task type's spec. It is built once, at start-up, from one Builder per
// name (the standard package wires the database and GCS reporters), and is
// safe for concurrent use.
type Factory struct {
	builders map[string]Builder
}

// NewFactory returns a factory that knows the given builders, by name.
func NewFactory(builders map[string]Builder) (*Factory, error) {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(builders)) {
		if name == "" {
			errs = append(errs, errors.New("a reporter name is empty"))
		}
		if builders[name] == nil {
			errs = append(errs, fmt.Errorf("reporter %q has no builder", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("error creating the reporter factory: %w", err)
	}
	return &Factory{builders: maps.Clone(builders)}, nil
}

// Names returns the reporter names the factory knows, sorted.
func (f *Factory) Names() []string { return slices.Sorted(maps.Keys(f.builders)) }

// Check reports every name the factory does not know, so a spec can be
// rejected at start-up rather than at its first run.
func (f *Factory) Check(names []string) error {
	var errs []error
	for _, n := range names {
		if _, ok := f.builders[n]; !ok {
			errs = append(errs, fmt.Errorf("unknown reporter %q: want one of %s", n, strings.Join(f.Names(), ", ")))
		}
	}
	return errors.Join(errs...)
}

// New returns the reporter of one run of task: the named reporters fanned
// out by Multi, in the order given (a name listed twice is built once), or
// Discard when names is empty.
func (f *Factory) New(names []string, task TaskInfo) (Reporter, error) {
	if err := f.Check(names); err != nil {
		return nil, fmt.Errorf("error creating reporters for task %s: %w", task.ID, err)
	}
	rs := make([]Reporter, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		r, err := f.builders[n].NewReporter(task)
		if err != nil {
			// The reporters built so far hold nothing until their first
			// Report (see reportertest), so they are dropped as they are.
			return nil, fmt.Errorf("error creating reporter %q for task %s: %w", n, task.ID, err)
		}
		rs = append(rs, r)
	}
	return Multi(rs...), nil
}

// Close closes every builder that holds resources (implements io.Closer).
func (f *Factory) Close() error {
	var errs []error
	for _, name := range f.Names() {
		if c, ok := f.builders[name].(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("error closing reporter %q: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Multi returns a Reporter that hands every envelope to each of rs and, at
// Finish, finishes them all and merges their outputs (a key set by two
// reporters keeps the later one's value). Zero reporters give Discard, one
// gives itself.
func Multi(rs ...Reporter) Reporter {
	switch len(rs) {
	case 0:
		return Discard{}
	case 1:
		return rs[0]
	}
	return multi(slices.Clone(rs))
}

// multi is the fan-out of Multi.
type multi []Reporter

// Report gives env to every reporter, even when one fails, and joins their errors.
func (m multi) Report(ctx context.Context, env Envelope) error {
	var errs []error
	for _, r := range m {
		if err := r.Report(ctx, env); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Finish finishes every reporter, even when one fails, and merges their
// outputs; the error joins theirs.
func (m multi) Finish(ctx context.Context) (map[string]any, error) {
	var errs []error
	var out map[string]any
	for _, r := range m {
		extra, err := r.Finish(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(extra) > 0 && out == nil {
			out = make(map[string]any, len(extra))
		}
		maps.Copy(out, extra)
	}
	return out, errors.Join(errs...)
}
