package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// A workflow step is a task (task_type) or a wait: it sleeps (sleep), waits
// for an event (wait_for_event) or for a named signal (approval). A wait
// step has no task: its run's row says what it waits for, and it ends when
// its time comes, a matching event is emitted or the signal is sent (see
// engine/workflow). This file holds what a wait step declares and what the
// runtime asks of it; workflow_wait_check.go checks it.

// Step kinds.
const (
	// StepKindTask is a step that runs a task of a task type.
	StepKindTask = "task"
	// StepKindSleep is a step that waits for a duration or until a time.
	StepKindSleep = "sleep"
	// StepKindEvent is a step that waits for an event.
	StepKindEvent = "wait_for_event"
	// StepKindApproval is a step that waits for a named signal.
	StepKindApproval = "approval"
	// StepKindWorkflow is a step that starts a child run of another
	// workflow and ends when it ends (workflow_child.go).
	StepKindWorkflow = "workflow"
)

// What a wait_for_event or approval step does when its timeout passes first.
const (
	// OnTimeoutFail fails the step, and its run with it (the default).
	OnTimeoutFail = "fail"
	// OnTimeoutContinue ends the step TIMED_OUT (outputs null); the steps
	// after it run, and may test steps.NAME.status == "TIMED_OUT".
	OnTimeoutContinue = "continue"
)

// Bounds of the durations a wait step declares (each at most the
// workflow's timeout, too).
const (
	minWaitDuration = time.Second
	maxWaitDuration = maxWorkflowTimeout
)

// wfEventTypes are the event types wf itself emits, which a wait_for_event
// step may wait for without declaring them otherwise.
var wfEventTypes = []string{
	"task.failed", "task.dead_lettered",
	"workflow.completed", "workflow.failed", "workflow.cancelled",
}

// sleepSpec is a step's sleep: a duration, or until a time.
type sleepSpec struct {
	Duration string `json:"duration"`
	Until    string `json:"until"`
}

// eventWaitSpec is a step's wait_for_event.
type eventWaitSpec struct {
	EventType string          `json:"event_type"`
	Match     string          `json:"match"`
	Payload   json.RawMessage `json:"payload"`
	Timeout   string          `json:"timeout"`
	OnTimeout string          `json:"on_timeout"`
}

// approvalSpec is a step's approval: the signal it waits for.
type approvalSpec struct {
	Signal    string          `json:"signal"`
	Payload   json.RawMessage `json:"payload"`
	Timeout   string          `json:"timeout"`
	OnTimeout string          `json:"on_timeout"`
}

// Wait is what a sleep, wait_for_event or approval step waits for. It is
// immutable.
type Wait struct {
	kind       string
	duration   time.Duration // a sleep's, 0 when it sleeps until
	until      *program
	eventType  string
	match      *program
	signal     string
	payloadRaw json.RawMessage
	payload    *jsonschema.Schema
	payloadDoc rawSchemas
	payloadVal any // the payload schema as JSON values, nil if none
	timeout    time.Duration
	onTimeout  string
}

// Kind is StepKindSleep, StepKindEvent or StepKindApproval.
func (w *Wait) Kind() string { return w.kind }

// Duration is how long a sleep step sleeps (0: it sleeps until UntilExpr).
func (w *Wait) Duration() time.Duration { return w.duration }

// UntilExpr is the source of a sleep step's until expression, "" if none.
func (w *Wait) UntilExpr() string { return w.until.text() }

// EventType is the event type a wait_for_event step waits for.
func (w *Wait) EventType() string { return w.eventType }

// MatchExpr is the source of a wait_for_event step's match, "" if any
// event of its type (and tenant) will do.
func (w *Wait) MatchExpr() string { return w.match.text() }

// Signal is the name of the signal an approval step waits for.
func (w *Wait) Signal() string { return w.signal }

// PayloadSchema is the JSON Schema of the event's or signal's payload, nil
// if the step declares none.
func (w *Wait) PayloadSchema() json.RawMessage { return bytes.Clone(w.payloadRaw) }

// Timeout is how long a wait_for_event or approval step waits (0: until
// its run's timeout).
func (w *Wait) Timeout() time.Duration { return w.timeout }

// OnTimeout is OnTimeoutFail or OnTimeoutContinue.
func (w *Wait) OnTimeout() string { return w.onTimeout }

// ValidatePayload checks a signal's (or event's) payload against the
// step's payload schema; any payload passes when it declares none.
func (w *Wait) ValidatePayload(v any) error {
	if w.payload == nil {
		return nil
	}
	doc, err := toJSONValue(v)
	if err != nil {
		return fmt.Errorf("error validating the payload: %w", err)
	}
	return validateAgainst(w.payload, w.payloadDoc, doc)
}

// Kind is the step's kind: StepKindTask, or its wait's.
func (s *Step) Kind() string {
	switch {
	case s.wait != nil:
		return s.wait.kind
	case s.child != nil:
		return StepKindWorkflow
	}
	return StepKindTask
}

// Wait is what a wait step waits for; nil for a task step.
func (s *Step) Wait() *Wait { return s.wait }

// WakeAt is when a sleep step that starts at now wakes: now + its
// duration, or the time its until expression returns (an RFC 3339 string
// or a time).
func (s *Step) WakeAt(env RunEnv, now time.Time) (time.Time, error) {
	if s.wait == nil || s.wait.kind != StepKindSleep {
		return time.Time{}, fmt.Errorf("error computing the wake time of step %s: it does not sleep", s.name)
	}
	if s.wait.until == nil {
		return now.Add(s.wait.duration), nil
	}
	out, err := s.wait.until.run(env.values(nil, 0))
	if err != nil {
		return time.Time{}, fmt.Errorf("error evaluating until of step %s: %w", s.name, err)
	}
	switch v := out.(type) {
	case time.Time:
		return v, nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("error evaluating until of step %s: %q returned %q, expected an RFC 3339 time such as 2026-12-24T18:00:00Z", s.name, s.wait.until.source, v)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("error evaluating until of step %s: %q returned %s, expected an RFC 3339 time", s.name, s.wait.until.source, typeName(out))
}

// EventValue is an event as a wait_for_event step's match sees it.
type EventValue struct {
	ID         string
	Type       string
	SchemaName string
	Payload    any
	CreatedAt  time.Time
}

// Matches evaluates a wait_for_event step's match over the run and ev
// (true when the step declares none). An event whose payload breaks the
// step's payload schema does not match.
func (s *Step) Matches(env RunEnv, ev EventValue) (bool, error) {
	if s.wait == nil || s.wait.kind != StepKindEvent {
		return false, fmt.Errorf("error matching an event to step %s: it waits for no event", s.name)
	}
	if ev.Type != s.wait.eventType {
		return false, nil
	}
	if s.wait.ValidatePayload(ev.Payload) != nil {
		return false, nil
	}
	if s.wait.match == nil {
		return true, nil
	}
	vals := env.values(nil, 0)
	vals["event"] = map[string]any{
		"event_id": ev.ID, "event_type": ev.Type, "schema_name": ev.SchemaName,
		"payload": ev.Payload, "created_at": ev.CreatedAt,
	}
	out, err := s.wait.match.run(vals)
	if err != nil {
		return false, fmt.Errorf("error evaluating match of step %s: %w", s.name, err)
	}
	return out.(bool), nil
}

// waitJSON is a wait step's wait as `wf compile --format json` shows it.
type waitJSON struct {
	Duration  string          `json:"duration,omitempty"`
	Until     string          `json:"until,omitempty"`
	EventType string          `json:"event_type,omitempty"`
	Match     string          `json:"match,omitempty"`
	Signal    string          `json:"signal,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	Timeout   string          `json:"timeout,omitempty"`
	OnTimeout string          `json:"on_timeout,omitempty"`
}

// toJSON renders a wait.
func (w *Wait) toJSON() *waitJSON {
	out := &waitJSON{Duration: optionalDuration(w.duration), Until: w.UntilExpr(), EventType: w.eventType, Match: w.MatchExpr(),
		Signal: w.signal, Timeout: optionalDuration(w.timeout)}
	if len(w.payloadRaw) > 0 {
		out.Payload = w.payloadRaw
	}
	if w.kind != StepKindSleep {
		out.OnTimeout = w.onTimeout
	}
	return out
}
