package spec

import (
	"maps"
	"slices"
	"time"
)

// HandlerKind says what runs a task type.
type HandlerKind string

// Handler kinds.
const (
	// HandlerBuiltin is a Go handler compiled into wf, by name.
	HandlerBuiltin HandlerKind = "builtin"
	// HandlerExec is a command that reads the task on stdin.
	HandlerExec HandlerKind = "exec"
	// HandlerHTTP is an endpoint the task is posted to.
	HandlerHTTP HandlerKind = "http"
)

// Handler is what runs a task type. Only the field of its Kind is set.
type Handler struct {
	Kind    HandlerKind
	Builtin string
	Exec    ExecHandler
	HTTP    HTTPHandler
}

// ExecHandler runs a command with the task as JSON on its standard input; it
// writes per-record envelopes to file descriptor 3 and its outputs to its
// standard output (see package runners/exec).
type ExecHandler struct {
	// Command is the program and its arguments; no shell is involved.
	Command []string
	// Env holds extra environment variables; ${NAME} in a value is to be
	// replaced from wf's environment by the runner.
	Env map[string]string
	// Dir is the working directory, "" for wf's own.
	Dir string
}

// HTTPHandler posts the task as JSON to an endpoint. ${NAME} in URL and
// header values is to be replaced from wf's environment by the runner.
type HTTPHandler struct {
	URL     string
	Headers map[string]string
	// Timeout bounds one request; it defaults to the task's timeout.
	Timeout time.Duration
}

// clone returns a deep copy, so callers cannot change a compiled Set.
func (h Handler) clone() Handler {
	h.Exec.Command = slices.Clone(h.Exec.Command)
	h.Exec.Env = maps.Clone(h.Exec.Env)
	h.HTTP.Headers = maps.Clone(h.HTTP.Headers)
	return h
}
