// Package builtin runs tasks with Go handlers compiled into wf, registered by
// name in a Registry. A spec names the handler; the engine passes the runner
// a map from task type to handler name. The default registry ships three
// handlers that need no code of their own: noop, sleep and fail. Handlers
// that need the database (ingestion, webhooks) are registered by the
// application (catalog/builtins, catalog/webhooks).
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// Handler runs one task in-process. It returns the task's outputs (a JSON
// value, or nil) or an error; wrap errors that a retry cannot fix with
// wftype.Permanent. Per-record results go to rep. A handler must return soon
// after ctx is done: the runner cannot stop a goroutine that ignores it.
type Handler func(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error)

// Registry maps handler names to handlers. It is safe for concurrent use, and
// each Registry is independent: there is no package-level registry.
type Registry struct {
	mu       sync.RWMutex
	handlers map[string]Handler
	// unserved are handler names this process knows but cannot run, with
	// why (see MarkUnserved).
	unserved map[string]string
}

// NewRegistry returns a registry holding the default handlers (see Names).
func NewRegistry() *Registry {
	return &Registry{handlers: map[string]Handler{
		NameNoop:  Noop,
		NameSleep: Sleep,
		NameFail:  Fail,
	}}
}

// Register adds a handler under name. It refuses an empty name, a nil
// handler and a name that is already taken, so that two packages cannot
// silently replace each other's handler.
func (r *Registry) Register(name string, h Handler) error {
	if name == "" {
		return errors.New("error registering builtin handler: the name is empty")
	}
	if h == nil {
		return fmt.Errorf("error registering builtin handler %q: the handler is nil", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.handlers[name]; ok {
		return fmt.Errorf("error registering builtin handler %q: a handler with that name is already registered", name)
	}
	delete(r.unserved, name)
	if r.handlers == nil {
		r.handlers = map[string]Handler{}
	}
	r.handlers[name] = h
	return nil
}

// Clone returns an independent registry holding the same handlers: a
// process binds its dependency-bound handlers into a clone, so the
// registry a program passes in stays as it gave it.
func (r *Registry) Clone() *Registry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return &Registry{handlers: maps.Clone(r.handlers), unserved: maps.Clone(r.unserved)}
}

// Lookup returns the handler registered under name.
func (r *Registry) Lookup(name string) (Handler, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.handlers[name]
	return h, ok
}

// Names returns the registered handler names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.handlers))
}

// Names returns the names of the default handlers that NewRegistry holds,
// sorted; spec validation uses it to check a handler name without a registry.
func Names() []string {
	return NewRegistry().Names()
}
