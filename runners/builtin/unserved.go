package builtin

import (
	"errors"
	"fmt"
)

// MarkUnserved records that this process knows the handler name but cannot
// run it, and why: its service is not configured (reason names the missing
// setting, e.g. "gcp.project is not set (WF_GCP_PROJECT)"). The engine then
// serves no task type naming it (runnerset.Set.Unserved): its tasks are
// left to an instance that can run them instead of ending as a fake
// success. A name already registered keeps its handler and is reported in
// the error (a program embedding wf may bring its own); a later Register
// of the name replaces the mark.
func (r *Registry) MarkUnserved(name, reason string) error {
	if name == "" || reason == "" {
		return errors.New("error marking a builtin handler unserved: the name and the reason are required")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.handlers[name]; ok {
		return fmt.Errorf("error marking builtin handler %q unserved: a handler with that name is registered", name)
	}
	if r.unserved == nil {
		r.unserved = map[string]string{}
	}
	r.unserved[name] = reason
	return nil
}

// Unserved returns why the handler name cannot run in this process, when
// MarkUnserved said so.
func (r *Registry) Unserved(name string) (reason string, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	reason, ok = r.unserved[name]
	return reason, ok
}
