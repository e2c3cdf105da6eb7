package spec

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/wfhq/wf/wftype"
)

// defaultSubscriptionSchemaName and defaultSubscriptionDedupKey are the
// expressions a Subscription gets when it names none.
const (
	defaultSubscriptionSchemaName = "event.schema_name"
	defaultSubscriptionDedupKey   = `"evt:" + event.event_id + ":" + task_type`
)

// Subscription is a compiled Subscription spec: for each matching event, it
// creates one task. It is immutable.
type Subscription struct {
	named
	eventType  string
	glob       bool
	when       *program
	taskType   *TaskType // for a workflow subscription, the workflow's inputs (Workflow.inputsTarget)
	workflow   *Workflow // the workflow it starts runs of, nil when it creates tasks
	schemaName *program
	inputNames []string // sorted
	inputs     map[string]*program
	dedupKey   *program
	payloadRaw json.RawMessage    // the payload schema, nil if none
	payload    *jsonschema.Schema // compiled, nil if none
}

// SubscriptionTask is the task a subscription creates for an event.
type SubscriptionTask struct {
	TaskType   string
	SchemaName string
	Inputs     map[string]any
	// DedupKey is "" when the task is not deduplicated. For a workflow
	// run it is the run's start key.
	DedupKey string
	// Workflow is set, and TaskType "", when the subscription starts a run
	// of this workflow with Inputs.
	Workflow string
}

// EventType is the event type or glob the subscription listens to.
func (s *Subscription) EventType() string { return s.eventType }

// IsGlob reports whether EventType is a glob pattern.
func (s *Subscription) IsGlob() bool { return s.glob }

// TaskType is the name of the task type the subscription creates;
// "workflow:NAME" for one that starts runs of workflow NAME (Workflow).
func (s *Subscription) TaskType() string { return s.taskType.name }

// WhenExpr is the source of the when expression, "" if none.
func (s *Subscription) WhenExpr() string {
	if s.when == nil {
		return ""
	}
	return s.when.source
}

// SchemaNameExpr is the source of the schema_name expression.
func (s *Subscription) SchemaNameExpr() string { return s.schemaName.source }

// InputExprs maps each input name to the source of its expression.
func (s *Subscription) InputExprs() map[string]string {
	out := make(map[string]string, len(s.inputs))
	for k, p := range s.inputs {
		out[k] = p.source
	}
	return out
}

// PayloadSchema is the JSON Schema the subscription declares for the
// payload of its events, nil if none.
func (s *Subscription) PayloadSchema() json.RawMessage {
	if s.payloadRaw == nil {
		return nil
	}
	return append(json.RawMessage(nil), s.payloadRaw...)
}

// DedupKeyExpr is the source of the dedup_key expression.
func (s *Subscription) DedupKeyExpr() string { return s.dedupKey.source }

// Matches reports whether an event of type eventType concerns the
// subscription: an exact match, or a match of the glob (path.Match syntax).
func (s *Subscription) Matches(eventType string) bool {
	if !s.glob {
		return s.eventType == eventType
	}
	ok, err := path.Match(s.eventType, eventType)
	return err == nil && ok
}

// Evaluate returns the task the subscription creates for event, given as a
// map with the keys event_id, event_type, scope, schema_name, payload (a map)
// and created_at (a time.Time or an RFC 3339 string). ok is false when the
// event's type does not match or when is false. The task's inputs are
// checked against its task type's schema.
func (s *Subscription) Evaluate(event map[string]any) (task SubscriptionTask, ok bool, err error) {
	ev, err := eventFromMap(event)
	if err != nil {
		return SubscriptionTask{}, false, fmt.Errorf("error evaluating subscription %s: %w", s.name, err)
	}
	if !s.Matches(ev.EventType) {
		return SubscriptionTask{}, false, nil
	}
	if s.payload != nil {
		doc, err := toJSONValue(ev.Payload)
		if err == nil {
			err = s.payload.Validate(doc)
		}
		if err != nil {
			return SubscriptionTask{}, false, fmt.Errorf("error evaluating subscription %s: the event's payload does not match the subscription's payload schema: %w", s.name, err)
		}
	}
	env := eventEnv{Event: ev}
	if s.when != nil {
		out, err := s.when.run(env)
		if err != nil {
			return SubscriptionTask{}, false, fmt.Errorf("error evaluating when of subscription %s: %w", s.name, err)
		}
		if !out.(bool) {
			return SubscriptionTask{}, false, nil
		}
	}
	out, err := s.schemaName.run(env)
	if err != nil {
		return SubscriptionTask{}, false, fmt.Errorf("error evaluating schema_name of subscription %s: %w", s.name, err)
	}
	task = SubscriptionTask{TaskType: s.taskType.name, SchemaName: out.(string), Inputs: make(map[string]any, len(s.inputs))}
	if task.SchemaName == "" {
		return SubscriptionTask{}, false, fmt.Errorf("error evaluating schema_name of subscription %s: %q returned an empty string", s.name, s.schemaName.source)
	}
	for _, name := range s.inputNames {
		v, err := s.inputs[name].run(env)
		if err != nil {
			return SubscriptionTask{}, false, fmt.Errorf("error evaluating input %s of subscription %s: %w", name, s.name, err)
		}
		task.Inputs[name] = v
	}
	if err := s.taskType.ValidateInputs(task.Inputs); err != nil {
		return SubscriptionTask{}, false, fmt.Errorf("error creating a %s task for subscription %s: %w", s.taskType.name, s.name, err)
	}
	if task.Inputs, err = roundTrip(task.Inputs); err != nil {
		return SubscriptionTask{}, false, fmt.Errorf("error creating a %s task for subscription %s: %w", s.taskType.name, s.name, err)
	}
	key, err := s.dedupKey.run(eventDedupEnv{Event: ev, TaskType: s.taskType.name})
	if err != nil {
		return SubscriptionTask{}, false, fmt.Errorf("error evaluating dedup_key of subscription %s: %w", s.name, err)
	}
	if task.DedupKey, _, err = checkDedupKey(key.(string), "subscription "+s.name); err != nil {
		return SubscriptionTask{}, false, err
	}
	if s.workflow != nil {
		task.TaskType, task.Workflow = "", s.workflow.name
		if task.DedupKey == "" {
			return SubscriptionTask{}, false, fmt.Errorf("error evaluating dedup_key of subscription %s: a run needs a start key, and %q returned an empty string", s.name, s.dedupKey.source)
		}
	}
	return task, true, nil
}

// roundTrip returns the JSON form of inputs (times become RFC 3339 strings,
// numbers float64), as the task will store them.
func roundTrip(inputs map[string]any) (map[string]any, error) {
	b, err := json.Marshal(inputs)
	if err != nil {
		return nil, fmt.Errorf("error encoding inputs: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("error decoding inputs: %w", err)
	}
	return out, nil
}

// eventFromMap reads an event given as a map into the typed environment.
func eventFromMap(m map[string]any) (eventFields, error) {
	var ev eventFields
	var err error
	str := func(key string) string {
		switch v := m[key].(type) {
		case nil:
			return ""
		case string:
			return v
		case fmt.Stringer: // uuid.UUID, wftype scopes and the like
			return v.String()
		default:
			if err == nil {
				err = fmt.Errorf("event field %s is %T, expected a string", key, v)
			}
			return ""
		}
	}
	ev.EventID = str("event_id")
	ev.EventType = str("event_type")
	ev.SchemaName = str("schema_name")
	switch v := m["scope"].(type) {
	case wftype.Scope:
		ev.Scope = string(v)
	default:
		ev.Scope = str("scope")
	}
	switch p := m["payload"].(type) {
	case nil:
		ev.Payload = map[string]any{}
	case map[string]any:
		ev.Payload = p
	case json.RawMessage:
		if e := json.Unmarshal(p, &ev.Payload); e != nil && err == nil {
			err = fmt.Errorf("event payload is not a JSON object: %w", e)
		}
	default:
		if err == nil {
			err = fmt.Errorf("event field payload is %T, expected a map", p)
		}
	}
	switch c := m["created_at"].(type) {
	case nil:
	case time.Time:
		ev.CreatedAt = c
	case string:
		t, e := time.Parse(time.RFC3339Nano, c)
		if e != nil && err == nil {
			err = fmt.Errorf("event field created_at is not an RFC 3339 time: %w", e)
		}
		ev.CreatedAt = t
	default:
		if err == nil {
			err = fmt.Errorf("event field created_at is %T, expected a time", c)
		}
	}
	return ev, err
}

// isGlob reports whether an event type is a glob pattern.
func isGlob(eventType string) bool { return strings.ContainsAny(eventType, `*?[\`) }
