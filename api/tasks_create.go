package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// createTaskRequest is the body of POST /tasks.
type createTaskRequest struct {
	TaskType   string          `json:"task_type"`
	SchemaName string          `json:"schema_name"`
	Inputs     json.RawMessage `json:"inputs"`
	DedupKey   string          `json:"dedup_key"`
	Priority   *int            `json:"priority"`
	RunAt      string          `json:"run_at" wf:"nonempty"`
	RunIn      string          `json:"run_in" wf:"nonempty"`
}

// createTask answers POST /tasks: it creates a task, of a type whose spec
// lets the caller's role create it (api.create; else 403), in a
// tenant (schema_name; default "system" for SYSTEM-scoped types), its inputs
// checked against the type's schema (400 listing every error under
// /inputs). An ASYNCHRONOUS task is queued: 202 Accepted with its status_url
// and a Location header. A SYNCHRONOUS task runs here, in front of the
// caller: 200 with its outcome (status COMPLETED with outputs, or FAILED with
// the error); its row is written, claimed by this instance and finished, so it
// shows in the history. A request whose dedup key is held by a live task
// creates nothing and answers 200 with that task, "deduplicated": true.
//
// schema_name must be "system" or the tenant of a registered catalog; a
// token limited to catalogs may only use theirs. Anything else answers 404,
// the same for a tenant that does not exist and for one the token may not see.
func (s *Server) createTask(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req createTaskRequest
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	if req.TaskType == "" {
		return validationOne("/task_type", "is required: the name of a task type")
	}
	tt, ok := s.cfg.Specs.TaskType(req.TaskType)
	if !ok {
		return validationOne("/task_type", "unknown task type "+quote(req.TaskType))
	}
	if !tt.CreatableBy(string(p.role)) {
		return createForbidden(tt.Name(), tt.CreateRoles())
	}
	if req.Priority != nil && (*req.Priority < math.MinInt16 || *req.Priority > math.MaxInt16) {
		return validationOne("/priority", "must be an integer from -32768 to 32767")
	}
	if prob := checkObject("/inputs", req.Inputs); prob != nil {
		return prob
	}
	// client.ParseDelay forgives spaces around the value (the CLI's
	// --run-at); the API takes the value as the document gives it.
	for ptr, v := range map[string]string{"/run_at": req.RunAt, "/run_in": req.RunIn} {
		if strings.TrimSpace(v) != v {
			return validationOne(ptr, "must not start or end with spaces or line breaks")
		}
	}
	runAfter, err := client.ParseDelay(clock.Now(), req.RunAt, req.RunIn)
	var derr *client.DelayError
	if errors.As(err, &derr) {
		return validationOne("/"+derr.Field, derr.Message)
	}
	schema := req.SchemaName
	if schema == "" && tt.Scope() == wftype.ScopeSystem {
		schema = wftype.SystemSchema
	}
	if schema != "" {
		if err := s.checkTenant(r, p, schema); err != nil {
			return err
		}
	}
	creq := client.Request{TaskType: req.TaskType, SchemaName: schema, Inputs: req.Inputs, DedupKey: req.DedupKey, Priority: req.Priority, RunAfter: runAfter}
	if tt.Mode() == wftype.ModeSync {
		task, dedup, err := s.runSync(r.Context(), creq)
		if err != nil {
			return err
		}
		v := s.newSubmissionView(task, dedup)
		shown := redact.Task(task)
		v.Outputs, v.Error = nullableJSON(shown.Outputs), shown.Error
		w.Header().Set("Location", v.StatusURL)
		writeJSON(w, http.StatusOK, v)
		return nil
	}
	res, err := s.client.Enqueue(r.Context(), creq)
	if err != nil {
		return err
	}
	s.warnUnserved(r.Context(), w, res.Task.TaskType)
	v := s.newSubmissionView(res.Task, res.Duplicate)
	if res.Replaced != nil { // a task of the same tenant: keys are per tenant
		v.ReplacedTaskID = res.Replaced.String()
	}
	writeSubmissionView(w, v)
	return nil
}

// checkTenant answers 404 unless schema is one the principal may create
// tasks or events in: "system" for an unlimited token, or the tenant of a
// registered catalog the token may use.
func (s *Server) checkTenant(r *http.Request, p *principal, schema string) error {
	missing := notFound("no catalog this token may use has schema_name %s", quote(schema))
	if schema == wftype.SystemSchema {
		if p.limited() {
			return missing
		}
		return nil
	}
	id, err := s.store.Catalog().CatalogIDBySchema(r.Context(), schema)
	if errors.Is(err, wftype.ErrNotFound) {
		return missing
	}
	if err != nil {
		return err
	}
	if !p.canUseCatalog(id) {
		return missing
	}
	return nil
}

// systemOrTenant is the tenant a request names in schema (default
// "system"), once checkTenant lets the principal use it.
func (s *Server) systemOrTenant(r *http.Request, p *principal, schema string) (string, error) {
	schema = cmp.Or(schema, wftype.SystemSchema)
	return schema, s.checkTenant(r, p, schema)
}

// checkObject answers 400 unless raw, a member of the body at pointer, is
// absent, null or a JSON object.
func checkObject(pointer string, raw json.RawMessage) *problem {
	if len(raw) > 0 && string(raw) != "null" && raw[0] != '{' {
		return validationOne(pointer, "must be a JSON object")
	}
	return nil
}

// createForbidden is the 403 for a task type whose spec (api.create) does
// not let the caller's role create it.
func createForbidden(taskType string, roles []string) *problem {
	msg := "is created only by wf itself (its subscriptions and schedules), never over the API"
	if len(roles) > 0 {
		msg = "may be created over the API only with a token of role " + strings.Join(roles, " or ")
	}
	return forbidden("task type %s %s", taskType, msg).at("/task_type", msg)
}

// validationOne is a 400 about one field of the body.
func validationOne(pointer, message string) *problem {
	return validationFailed("%s %s", pointer, message).at(pointer, message)
}

// quote quotes a client's value for a message, bounded in length.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}
