package api

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/wftype"
)

// emitEventRequest is the body of POST /events.
type emitEventRequest struct {
	EventType  string          `json:"event_type"`
	Scope      string          `json:"scope" wf:"nonempty"`
	SchemaName string          `json:"schema_name"`
	Payload    json.RawMessage `json:"payload"`
	DedupKey   string          `json:"dedup_key"`
}

// emitEvent answers POST /events: it writes an event to the outbox, where
// the event consumer turns it into the tasks its subscriptions ask for, and
// answers 202 Accepted. An event whose dedup key is held by a pending one is
// not written: 200 with that event, "deduplicated": true. The tenant
// (schema_name, default "system") follows the rules of POST /tasks: a token
// limited to catalogs emits only for its own tenants. The event types wf
// emits itself (events.Owned: catalog.*, collection.*, task.*, …) answer
// 403 to every token: subscriptions act on them (drops, webhook fan-out).
func (s *Server) emitEvent(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req emitEventRequest
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	if req.EventType == "" {
		return validationOne("/event_type", "is required: lower-case words joined by dots, such as catalog.updated")
	}
	if events.Owned(req.EventType) {
		msg := "is a type wf emits itself (" + strings.Join(events.OwnedFamilies(), ".*, ") + ".*); clients may not emit it"
		return forbidden("event type %s %s", quote(req.EventType), msg).at("/event_type", msg)
	}
	if prob := checkObject("/payload", req.Payload); prob != nil {
		return prob
	}
	schema, err := s.systemOrTenant(r, p, req.SchemaName)
	if err != nil {
		return err
	}
	res, err := s.emitter.Emit(r.Context(), events.Event{
		Type: req.EventType, Scope: req.Scope, SchemaName: schema, Payload: nullableJSON(req.Payload), DedupKey: req.DedupKey,
	})
	if err != nil {
		return err
	}
	status := http.StatusAccepted
	if res.Duplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, wftype.EmittedEventView{EventView: newEventView(res.Event), Deduplicated: res.Duplicate})
	return nil
}
