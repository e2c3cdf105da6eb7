package spec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// This file holds what lets one workflow start another: a workflow's
// outputs (expressions over its run, evaluated when it completes), the
// `workflow:` step kind that starts a child run and completes with the
// child's outputs, and the checks `wf validate` makes of them: an unknown
// workflow, child inputs that break the child's inputs schema, reads of
// outputs the child does not declare, and a cycle of workflows calling each
// other.

// Child is the workflow a child workflow step starts, nil for a step that
// runs a task.
func (s *Step) Child() *Workflow { return s.child }

// OutputNames lists the outputs the workflow declares, sorted.
func (w *Workflow) OutputNames() []string { return slices.Clone(w.outputNames) }

// OutputExprs maps each output name to the source of its expression.
func (w *Workflow) OutputExprs() map[string]string {
	out := make(map[string]string, len(w.outputs))
	for k, p := range w.outputs {
		out[k] = p.source
	}
	return out
}

// Calls lists the workflows the workflow's steps start, sorted, once each.
func (w *Workflow) Calls() []string {
	var out []string
	for _, s := range w.steps {
		if s.child != nil && !slices.Contains(out, s.child.name) {
			out = append(out, s.child.name)
		}
	}
	slices.Sort(out)
	return out
}

// RunOutputs evaluates the workflow's outputs over a run that completed
// (every step ended) and returns them as a JSON object; nil when the
// workflow declares none.
func (w *Workflow) RunOutputs(env RunEnv) (json.RawMessage, error) {
	if len(w.outputNames) == 0 {
		return nil, nil
	}
	vals := env.values(nil, 0)
	out, err := runAll(w.outputs, w.outputNames, vals, "output", "workflow "+w.name)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("error encoding the outputs of workflow %s: %w", w.name, err)
	}
	return b, nil
}

// inputsTarget is the workflow's inputs as a target of mapped inputs: a
// TaskType that holds only its inputs schema, under the name the schema
// was compiled with, so the checks of a task's mapped inputs
// (checkMappedInputs, checkInputType, checkInputLiteral) apply to a child
// run's or a triggered run's inputs as they are.
func (w *Workflow) inputsTarget() *TaskType {
	return &TaskType{named: named{name: workflowSchemaPrefix + w.name}, inputs: w.inputs, inputsDoc: w.inputsDoc}
}

// workflowSchemaPrefix prefixes a workflow's name in the name its inputs
// schema is compiled with.
const workflowSchemaPrefix = "workflow:"

// what names t in messages: `task type "x"`, or `workflow "x"` for a
// workflow's inputs (inputsTarget).
func (t *TaskType) what() string {
	if name, ok := strings.CutPrefix(t.name, workflowSchemaPrefix); ok {
		return fmt.Sprintf("workflow %q", name)
	}
	return fmt.Sprintf("task type %q", t.name)
}

// target is what a step's inputs are checked against: its task type's
// inputs, or its child workflow's. Nil when unknown.
func (st *Step) target() *TaskType {
	if st.child != nil {
		return st.child.inputsTarget()
	}
	return st.taskType
}

// workflowCalls reads, from each Workflow document, the workflows its
// steps start: step name → workflow name.
func (c *checker) workflowCalls(docs []*document) map[string]map[string]string {
	calls := map[string]map[string]string{}
	for _, d := range docs {
		var s struct {
			Steps map[string]struct {
				Workflow string `json:"workflow"`
			} `json:"steps"`
		}
		b, err := json.Marshal(d.value)
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil || d.name == "" {
			continue
		}
		m := map[string]string{}
		for step, st := range s.Steps {
			if st.Workflow != "" {
				m[step] = st.Workflow
			}
		}
		calls[d.name] = m
	}
	return calls
}

// orderWorkflows returns the Workflow documents in the order they compile
// in, every workflow after those its steps start (so a child step is typed
// by its child's compiled inputs and outputs), and reports each cycle of
// workflows starting each other at the `workflow` field of the step that
// closes it. The workflows of a cycle compile without their children.
func (c *checker) orderWorkflows(docs []*document) []*document {
	byName := map[string]*document{}
	for _, d := range docs {
		if d.name != "" {
			if _, dup := byName[d.name]; !dup {
				byName[d.name] = d
			}
		}
	}
	calls := c.workflowCalls(docs)
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var order []*document
	var path []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = visiting
		path = append(path, name)
		m := calls[name]
		for _, step := range sortedKeys(m) {
			callee := m[step]
			if _, declared := byName[callee]; !declared {
				continue // step() reports an unknown workflow
			}
			switch state[callee] {
			case visiting:
				i := slices.Index(path, callee)
				cycle := append(slices.Clone(path[i:]), callee)
				c.fail(byName[name], stepPtr(step, "workflow"),
					"workflows start each other in a cycle (%s): a run would never end; a workflow cannot start itself, directly or through other workflows",
					strings.Join(cycle, " → "))
			case 0:
				visit(callee)
			}
		}
		path = path[:len(path)-1]
		state[name] = done
		order = append(order, byName[name])
	}
	for _, name := range sortedKeys(byName) {
		if state[name] == 0 {
			visit(name)
		}
	}
	for _, d := range docs {
		if d.name == "" || byName[d.name] != d {
			order = append(order, d) // unnamed or a duplicate: compiled for its own errors
		}
	}
	return order
}

// lookupWorkflow resolves a reference to a workflow at ptr of d, as
// lookupTaskType does for a task type: found is false, with an error, when
// no workflow has that name; true with a nil workflow when it exists but
// did not compile (its own errors say why, or it is in a cycle).
func (c *checker) lookupWorkflow(d *document, ptr, name string) (w *Workflow, found bool) {
	if w, ok := c.workflows[name]; ok {
		return w, true
	}
	if _, ok := c.declarations[KindWorkflow][name]; ok {
		return nil, true
	}
	declared := sortedKeys(c.declarations[KindWorkflow])
	hint := ""
	if s, ok := suggest(name, declared); ok {
		hint = fmt.Sprintf("; did you mean %q?", s)
	} else if len(declared) > 0 {
		hint = "; the workflows are " + strings.Join(declared, ", ")
	}
	c.fail(d, ptr, "unknown workflow %q%s", name, hint)
	return nil, false
}

// childStep checks what a child workflow step says of itself: the workflow
// it starts, its inputs against that workflow's inputs schema, and none of
// the fields of a task.
func (wc *workflowCheck) childStep(st *Step, name string, s stepSpec) {
	c, d := wc.c, wc.d
	if s.TaskType != "" {
		c.failKey(d, stepPtr(name, "task_type"), "a step runs a task (task_type) or starts a child run (workflow), not both")
		return
	}
	for _, field := range []string{"max_retries", "priority"} {
		if _, set := d.lookup(stepPtr(name, field)); set {
			c.failKey(d, stepPtr(name, field), "a workflow step starts a child run and has no task of its own; set %s on the child workflow's steps", field)
		}
	}
	if s.Workflow == wc.w.name {
		return // orderWorkflows reported the cycle
	}
	w, _ := c.lookupWorkflow(d, stepPtr(name, "workflow"), s.Workflow)
	st.child = w
	if w != nil {
		c.checkMappedInputs(d, stepPtr(name, "inputs"), w.inputsTarget(), s.Inputs)
	}
}

// childOutputsType is the type of the outputs of a child workflow's run:
// an object of its declared outputs, typed by their expressions.
func childOutputsType(w *Workflow) reflect.Type {
	if w == nil {
		return anyType
	}
	if w.outputsType == nil {
		return reflect.TypeFor[map[string]any]()
	}
	return w.outputsType
}

// childRead checks a read of steps.NAME.outputs.X where step NAME starts
// workflow w: X must be an output w declares.
func childRead(r read, w *Workflow, step string) (int, string) {
	if w == nil || len(r.names) < 4 {
		return 0, ""
	}
	if slices.Contains(w.outputNames, r.names[3]) {
		return 0, ""
	}
	hint := "; it declares no outputs (add outputs: to it)"
	if len(w.outputNames) > 0 {
		hint = "; it declares " + strings.Join(w.outputNames, ", ")
		if sug, ok := suggest(r.names[3], w.outputNames); ok {
			hint = fmt.Sprintf("; did you mean steps.%s.outputs.%s?", step, sug)
		}
	}
	return 3, fmt.Sprintf("reads steps.%s.outputs.%s, but workflow %s declares no output %s%s", step, r.names[3], w.name, r.names[3], hint)
}

// outputs compiles the workflow's outputs: expressions over its run's
// inputs and every step (all have ended when it completes), typed as the
// steps' expressions are.
func (wc *workflowCheck) compileOutputs(exprs map[string]string) {
	if len(exprs) == 0 {
		return
	}
	var all []field
	for _, st := range wc.w.stepIndex {
		out, ok := wc.outputs[st.name]
		if !ok {
			out = anyType
		}
		all = append(all, field{name: st.name, typ: structType([]field{
			{name: "outputs", typ: out},
			{name: "status", typ: reflect.TypeFor[string]()},
		})})
	}
	slices.SortFunc(all, func(a, b field) int { return strings.Compare(a.name, b.name) })
	fields := []field{
		{name: "run_id", typ: reflect.TypeFor[string]()},
		{name: "schema_name", typ: reflect.TypeFor[string]()},
		{name: "inputs", typ: schemaType(wc.inputs, 0)},
		{name: "steps", typ: structType(all)},
	}
	if fields[2].typ.Kind() != reflect.Struct {
		fields[2].typ = reflect.TypeFor[map[string]any]()
	}
	w := wc.w
	w.outputNames = sortedKeys(exprs)
	w.outputs = map[string]*program{}
	types := make([]field, 0, len(exprs))
	wc.item, wc.itemOf = nil, ""
	for _, name := range w.outputNames {
		p, t := wc.compile(joinPointer("/outputs", name), exprs[name], fields, resultAny)
		w.outputs[name] = p
		if t == nil {
			t = anyType
		}
		types = append(types, field{name: name, typ: t})
	}
	w.outputsType = structType(types)
}

// whatBare names t as the messages of typed inputs do: "task type x", or
// "workflow x" for a workflow's inputs.
func (t *TaskType) whatBare() string {
	if name, ok := strings.CutPrefix(t.name, workflowSchemaPrefix); ok {
		return "workflow " + name
	}
	return "task type " + t.name
}

// creates names what inputs that break t's schema prevent: a task, or a
// run of a workflow.
func (t *TaskType) creates() string {
	if strings.HasPrefix(t.name, workflowSchemaPrefix) {
		return "run"
	}
	return "task"
}
