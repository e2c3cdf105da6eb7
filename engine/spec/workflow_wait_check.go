package spec

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// This file checks the wait steps of a workflow (workflow_wait.go): which
// kind a step is, its durations against the workflow's timeout, the event
// type it waits for, its payload schema, its until and match expressions,
// and the reads of steps.NAME.status that compare it with a status the
// step can never end in (TIMED_OUT of a step that cannot time out).

// taskOnlyFields are the fields only a task step may have.
var taskOnlyFields = []string{"inputs", "for_each", "concurrency", "max_items", "max_retries", "priority"}

// stepKindFields are the fields that make a step of each kind.
var stepKindFields = []string{"task_type", StepKindWorkflow, StepKindSleep, StepKindEvent, StepKindApproval}

// stepKind reports which kind a step is, and fails a step of none or of
// several kinds. ok is false then.
func (wc *workflowCheck) stepKind(name string, s stepSpec) (string, bool) {
	var kinds []string
	for _, f := range stepKindFields {
		if _, set := wc.d.lookup(stepPtr(name, f)); set {
			kinds = append(kinds, f)
		}
	}
	switch len(kinds) {
	case 0:
		wc.c.failKey(wc.d, stepPtr(name, ""), "a step needs one of task_type (a task), workflow (a child run), sleep, wait_for_event or approval")
		return "", false
	case 1:
	default:
		wc.c.failKey(wc.d, stepPtr(name, kinds[1]), "a step is one thing: it has %s already, so it cannot also have %s", kinds[0], kinds[1])
		return "", false
	}
	switch kinds[0] {
	case "task_type":
		return StepKindTask, true
	case StepKindWorkflow: // a child run takes inputs and for_each as a task does (workflow_child_check.go)
		return StepKindWorkflow, true
	}
	for _, f := range taskOnlyFields {
		if _, set := wc.d.lookup(stepPtr(name, f)); set {
			wc.c.failKey(wc.d, stepPtr(name, f), "only a task step (task_type) has %s; this step is a %s step", f, kinds[0])
		}
	}
	return kinds[0], true
}

// waitStep checks what a wait step says of itself and returns its Wait.
func (wc *workflowCheck) waitStep(name, kind string, s stepSpec) *Wait {
	c, d := wc.c, wc.d
	w := &Wait{kind: kind, onTimeout: OnTimeoutFail}
	ptr := stepPtr(name, kind)
	switch kind {
	case StepKindSleep:
		sl := s.Sleep
		if (sl.Duration == "") == (sl.Until == "") {
			c.fail(d, ptr, "a sleep has either a duration (such as 10m) or until (an expression returning a time), not %s", map[bool]string{true: "both", false: "neither"}[sl.Duration != ""])
			return w
		}
		if sl.Duration != "" {
			w.duration = wc.waitDuration(ptr+"/duration", sl.Duration, "sleeps")
		}
	case StepKindEvent:
		ev := s.WaitForEvent
		w.eventType = ev.EventType
		w.payloadRaw, w.payload, w.payloadDoc, w.payloadVal = wc.payloadSchema(name, ptr, ev.Payload)
		wc.checkEventType(ptr+"/event_type", ev.EventType, w.payloadRaw != nil)
		w.timeout, w.onTimeout = wc.waitTimeout(ptr, ev.Timeout, ev.OnTimeout)
	case StepKindApproval:
		ap := s.Approval
		w.signal = orDefault(ap.Signal, name)
		w.payloadRaw, w.payload, w.payloadDoc, w.payloadVal = wc.payloadSchema(name, ptr, ap.Payload)
		w.timeout, w.onTimeout = wc.waitTimeout(ptr, ap.Timeout, ap.OnTimeout)
	}
	return w
}

// orDefault is a, or b when a is empty.
func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// waitDuration checks a wait's duration at ptr: within bounds, and shorter
// than the workflow's timeout (past which the run fails anyway).
func (wc *workflowCheck) waitDuration(ptr, text, verb string) time.Duration {
	v, ok := wc.c.duration(wc.d, ptr, text, 0, minWaitDuration, maxWaitDuration)
	if !ok {
		return 0
	}
	if v >= wc.w.timeout {
		wc.c.fail(wc.d, ptr, "%s %s, as long as or longer than the workflow's timeout (%s): the run would fail first; raise the workflow's timeout or shorten this",
			verb, FormatDuration(v), FormatDuration(wc.w.timeout))
	}
	return v
}

// waitTimeout checks a wait's timeout and on_timeout, under ptr.
func (wc *workflowCheck) waitTimeout(ptr, timeout, onTimeout string) (time.Duration, string) {
	var d time.Duration
	if timeout != "" {
		d = wc.waitDuration(ptr+"/timeout", timeout, "times out after")
	}
	if onTimeout != "" && timeout == "" {
		wc.c.fail(wc.d, ptr+"/on_timeout", "on_timeout needs a timeout: without one the step waits until the run's own timeout fails the run")
	}
	return d, orDefault(onTimeout, OnTimeoutFail)
}

// payloadSchema compiles a wait step's payload schema, when it declares
// one, reporting its mistakes where they are.
func (wc *workflowCheck) payloadSchema(step, ptr string, raw []byte) ([]byte, *jsonschema.Schema, rawSchemas, any) {
	if len(raw) == 0 {
		return nil, nil, nil, nil
	}
	key := "workflow:" + wc.w.name + "/steps/" + step + "/payload"
	schema, doc, violations := compileInputSchema(key, raw)
	for _, v := range violations {
		wc.c.add(wc.d, v.pointer(ptr+"/payload"), wc.d.violationError(v, ptr+"/payload"))
	}
	if schema == nil || len(violations) > 0 {
		return nil, nil, nil, nil
	}
	return raw, schema, doc, doc[inputsSchemaURL(key)]
}

// checkEventType fails an event type nothing is known to emit: not one of
// wf's own, named by no Subscription, and the step declares no payload
// schema (which says the application emits it).
func (wc *workflowCheck) checkEventType(ptr, typ string, declared bool) {
	if declared || slices.Contains(wfEventTypes, typ) {
		return
	}
	known := slices.Clone(wfEventTypes)
	for _, s := range wc.c.subscriptions {
		if s.Matches(typ) {
			return
		}
		if !s.IsGlob() {
			known = append(known, s.EventType())
		}
	}
	hint := ""
	if sug, ok := suggest(typ, known); ok {
		hint = fmt.Sprintf("did you mean %q? ", sug)
	}
	wc.c.fail(wc.d, ptr, "unknown event type %q: wf emits no such event and no Subscription names it; %sfor an event your application emits, declare its payload schema on the step (payload: {type: object, ...})", typ, hint)
}

// waitOutputs is the type of a wait step's outputs: a sleep's {until}, the
// payload of the event or signal (typed by its schema when declared).
func waitOutputs(w *Wait) reflect.Type {
	if w.kind == StepKindSleep {
		return structType([]field{{name: "until", typ: reflect.TypeFor[string]()}})
	}
	if w.payloadVal != nil {
		return schemaType(w.payloadVal, 0)
	}
	return anyType
}

// waitExpressions compiles a wait step's until or match against what it
// sees (fields; match also sees the event).
func (wc *workflowCheck) waitExpressions(st *Step, fields []field) {
	s, w := wc.specs[st.name], st.wait
	switch w.kind {
	case StepKindSleep:
		if s.Sleep.Until == "" {
			return
		}
		ptr := stepPtr(st.name, StepKindSleep) + "/until"
		p, t := wc.compile(ptr, s.Sleep.Until, fields, resultAny)
		w.until = p
		if t != nil && t.Kind() != reflect.Interface && t.Kind() != reflect.String && t != reflect.TypeFor[time.Time]() {
			wc.c.fail(wc.d, ptr, "until must return a time (an RFC 3339 string such as 2026-12-24T18:00:00Z); %q returns %s", s.Sleep.Until, kindName(t))
		}
		wc.checkStatusReads(ptr, s.Sleep.Until)
	case StepKindEvent:
		if s.WaitForEvent.Match == "" {
			return
		}
		ptr := stepPtr(st.name, StepKindEvent) + "/match"
		payload := reflect.TypeFor[map[string]any]()
		if w.payloadVal != nil {
			if t := schemaType(w.payloadVal, 0); t.Kind() == reflect.Struct {
				payload = t
			}
		}
		str := reflect.TypeFor[string]()
		event := structType([]field{
			{name: "created_at", typ: reflect.TypeFor[time.Time]()},
			{name: "event_id", typ: str},
			{name: "event_type", typ: str},
			{name: "payload", typ: payload},
			{name: "schema_name", typ: str},
		})
		wc.event = w
		w.match, _ = wc.compile(ptr, s.WaitForEvent.Match, append(slices.Clone(fields), field{name: "event", typ: event}), resultBool)
		wc.event = nil
		if w.match != nil {
			wc.c.checkComparisons(wc.d, ptr, s.WaitForEvent.Match, wc.schemaOf)
		}
		wc.checkStatusReads(ptr, s.WaitForEvent.Match)
	}
}

// eventRead checks a chain of reads of event in a match expression (r.names[0]
// is "event"): a field events have, a payload property the step's payload
// schema declares.
func (wc *workflowCheck) eventRead(r read) (int, string) {
	if wc.event == nil || len(r.names) < 2 {
		return 0, ""
	}
	fields := []string{"created_at", "event_id", "event_type", "payload", "schema_name"}
	if !slices.Contains(fields, r.names[1]) {
		hint := "; an event has " + strings.Join(fields, ", ")
		if sug, ok := suggest(r.names[1], fields); ok {
			hint = fmt.Sprintf("; did you mean event.%s?", sug)
		}
		return 1, fmt.Sprintf("reads event.%s, but an event has no field %s%s", r.names[1], r.names[1], hint)
	}
	if r.names[1] != "payload" || wc.event.payloadVal == nil {
		return 0, ""
	}
	return wc.schemaRead(r, 2, wc.event.payloadVal, "event.payload", "the step's payload schema")
}

// stepStatuses are the statuses a step downstream of another can read of
// it: the statuses a step ends in and lets its dependants run.
var stepStatuses = []string{"COMPLETED", "SKIPPED", "TIMED_OUT"}

// checkStatusReads fails a comparison of steps.NAME.status with a status
// that step never ends in for the steps after it: TIMED_OUT of a step that
// cannot time out and go on (no timeout, or on_timeout: fail), or a
// status no step downstream ever sees.
func (wc *workflowCheck) checkStatusReads(ptr, source string) {
	v := &statusComparisons{}
	if !walkSource(source, v) {
		return
	}
	for _, sc := range v.found {
		st, ok := wc.w.stepIndex[sc.step]
		if !ok {
			continue // the read checks report it
		}
		msg := ""
		switch {
		case !slices.Contains(stepStatuses, sc.status):
			msg = fmt.Sprintf("steps.%s.status is never %s where this step reads it: a step downstream runs after its upstream steps end %s",
				sc.step, strconv.Quote(sc.status), strings.Join(stepStatuses, ", "))
		case sc.status == "TIMED_OUT" && (st.wait == nil || st.wait.timeout == 0 || st.wait.onTimeout != OnTimeoutContinue):
			msg = fmt.Sprintf("step %s never ends TIMED_OUT: only a wait_for_event or approval step with a timeout and on_timeout: continue does", sc.step)
		}
		if msg == "" {
			continue
		}
		p := wc.d.at(ptr)
		if exact, found := wc.d.exprPos(ptr, source, 1, sc.offset); found {
			p = exact
		}
		wc.c.add(wc.d, ptr, wc.d.errorAt(p, "%s%s", prefixPath(fieldPath(wc.d.value, ptr)), msg))
	}
}

// statusComparison is a comparison of steps.STEP.status with a string.
type statusComparison struct {
	step, status string
	offset       int // of the string, in the expression
}

// statusComparisons finds the comparisons (== and !=) of steps.X.status
// with a string literal.
type statusComparisons struct{ found []statusComparison }

// Visit implements ast.Visitor.
func (v *statusComparisons) Visit(n *ast.Node) {
	b, ok := (*n).(*ast.BinaryNode)
	if !ok || (b.Operator != "==" && b.Operator != "!=") {
		return
	}
	for _, pair := range [][2]ast.Node{{b.Left, b.Right}, {b.Right, b.Left}} {
		names, _, ok := chainOf(pair[0])
		lit, isStr := pair[1].(*ast.StringNode)
		if ok && isStr && len(names) == 3 && names[0] == "steps" && names[2] == "status" {
			v.found = append(v.found, statusComparison{step: names[1], status: lit.Value, offset: lit.Location().From})
		}
	}
}
