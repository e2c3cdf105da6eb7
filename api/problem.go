package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// Problem types (RFC 9457 "type" members). They are URNs: stable names a
// client can switch on, documented in the OpenAPI document.
const (
	typeUnauthorized     = "urn:wf:problem:unauthorized"
	typeForbidden        = "urn:wf:problem:forbidden"
	typeNotFound         = "urn:wf:problem:not-found"
	typeMethodNotAllowed = "urn:wf:problem:method-not-allowed"
	typeInvalidRequest   = "urn:wf:problem:invalid-request"
	typeValidation       = "urn:wf:problem:validation-failed"
	typeTooLarge         = "urn:wf:problem:body-too-large"
	typeMediaType        = "urn:wf:problem:unsupported-media-type"
	typeConflict         = "urn:wf:problem:conflict"
	typeBusy             = "urn:wf:problem:busy"
	typeNotImplemented   = "urn:wf:problem:not-implemented"
	typeUnavailable      = "urn:wf:problem:unavailable"
	typeInternal         = "urn:wf:problem:internal"
)

// fieldError is one entry of a problem's errors array: what is wrong and
// where, as a JSON pointer into the request body or the name of a query or
// path parameter.
type fieldError struct {
	Pointer   *string `json:"pointer,omitempty"`
	Parameter string  `json:"parameter,omitempty"`
	Message   string  `json:"message"`
}

// problem is an RFC 9457 problem document, and the error handlers return to
// send one.
type problem struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Detail   string       `json:"detail,omitempty"`
	Instance string       `json:"instance,omitempty"`
	Errors   []fieldError `json:"errors,omitempty"`

	header http.Header
}

// Error implements error.
func (p *problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail) }

func newProblem(status int, typ, title, format string, args ...any) *problem {
	return &problem{Type: typ, Title: title, Status: status, Detail: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *problem {
	return newProblem(http.StatusNotFound, typeNotFound, "Not found", format, args...)
}

// notFoundAs returns prob when err is (or wraps) wftype.ErrNotFound, else
// err: the answer for a look-up whose miss has a better word than the
// store's.
func notFoundAs(err error, prob *problem) error {
	if errors.Is(err, wftype.ErrNotFound) {
		return prob
	}
	return err
}

func badRequest(format string, args ...any) *problem {
	return newProblem(http.StatusBadRequest, typeInvalidRequest, "Invalid request", format, args...)
}

// validationFailed is a 400 about a body that breaks the rules of its
// operation; its errors say which members.
func validationFailed(format string, args ...any) *problem {
	return newProblem(http.StatusBadRequest, typeValidation, "Validation failed", format, args...)
}

func forbidden(format string, args ...any) *problem {
	return newProblem(http.StatusForbidden, typeForbidden, "Forbidden", format, args...)
}

func conflict(format string, args ...any) *problem {
	return newProblem(http.StatusConflict, typeConflict, "Conflict", format, args...)
}

// invalidParameter is a 400 about one query or path parameter.
func invalidParameter(name, format string, args ...any) *problem {
	msg := fmt.Sprintf(format, args...)
	p := badRequest("query or path parameter %q: %s", name, msg)
	p.Errors = []fieldError{{Parameter: name, Message: msg}}
	return p
}

// pointerError is one fieldError about a JSON pointer in the body.
func pointerError(pointer, message string) fieldError {
	return fieldError{Pointer: &pointer, Message: message}
}

// at makes p a problem about one member of the body: its errors become the
// one field error at pointer saying message. It returns p, so that a
// constructor and at read as one expression.
func (p *problem) at(pointer, message string) *problem {
	p.Errors = []fieldError{pointerError(pointer, message)}
	return p
}

// validationProblem is a 400 listing every violation of a body's rules.
func validationProblem(detail, prefix string, errs spec.InputErrors) *problem {
	p := validationFailed("%s", detail)
	for _, e := range errs {
		p.Errors = append(p.Errors, pointerError(prefix+e.Pointer, e.Message))
	}
	return p
}

// writeProblem sends p as application/problem+json.
func writeProblem(w http.ResponseWriter, r *http.Request, p *problem) {
	if p.Instance == "" && r != nil {
		p.Instance = r.URL.Path
	}
	for k, vs := range p.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// toProblem maps an error from the engine to the problem a client sees. Raw
// database errors never reach the client: they become a 500 whose detail
// says nothing of the cause (the cause is logged).
func (s *Server) toProblem(r *http.Request, err error) *problem {
	var p *problem
	if errors.As(err, &p) {
		return p
	}
	var verr *client.ValidationError
	var cerr *registry.ValidationError
	switch {
	case errors.As(err, &verr):
		if len(verr.Inputs) > 0 {
			return validationProblem(fmt.Sprintf("the inputs do not match the input schema of task type %s", verr.TaskType), "/inputs", verr.Inputs)
		}
		return validationFailed("%s", verr.Message).at("/"+cmp.Or(verr.Field, "task_type"), verr.Message)
	case errors.As(err, &cerr):
		return validationProblem("the request breaks the catalog registry's rules", "", cerr.Errors)
	case errors.Is(err, client.ErrUnknownTaskType):
		return validationFailed("%s", lastPart(err)).at("/task_type", "unknown task type")
	case errors.Is(err, events.ErrInvalidEvent):
		p := validationFailed("%s", strings.TrimPrefix(err.Error(), "invalid event: "))
		var ferr *events.InvalidEventError
		if errors.As(err, &ferr) {
			p.at("/"+ferr.Field, ferr.Reason)
		}
		return p
	case errors.Is(err, wftype.ErrNotFound):
		return notFound("%s", lastPart(err))
	case errors.Is(err, wftype.ErrConflict):
		return conflict("%s", lastPart(err))
	case store.IsUnavailable(err):
		s.log.Warn("HTTP API request failed: the database is unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		p := newProblem(http.StatusServiceUnavailable, typeUnavailable, "Service unavailable", "the database cannot be reached; nothing was changed, retry later")
		p.header = http.Header{"Retry-After": {"5"}}
		return p
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return newProblem(499, typeInvalidRequest, "Client closed request", "the client went away")
	}
	s.log.Error("HTTP API request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	return newProblem(http.StatusInternalServerError, typeInternal, "Internal error", "the server could not complete the request; the error is in its log")
}

// lastPart strips the "error doing X: " wrappers and the sentinel's own text
// from an engine error, keeping the sentence about the resource.
func lastPart(err error) string {
	msg := err.Error()
	for _, sentinel := range []error{wftype.ErrNotFound, wftype.ErrConflict} {
		msg = strings.TrimSuffix(msg, ": "+sentinel.Error())
	}
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "error ") {
		msg = msg[i+2:]
	}
	return msg
}
