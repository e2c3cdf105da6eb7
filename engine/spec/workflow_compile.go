package spec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// KindWorkflow is the kind of a Workflow document.
const KindWorkflow = "Workflow"

// workflowSpec is the shape of a Workflow document (pass 1 checked it).
type workflowSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Inputs      json.RawMessage `json:"inputs"`
	Timeout     string          `json:"timeout"`
	API         struct {
		Start  *[]string `json:"start"`
		Signal *[]string `json:"signal"`
	} `json:"api"`
	Steps   map[string]stepSpec `json:"steps"`
	Outputs map[string]string   `json:"outputs"`
}

// stepSpec is the shape of one step of a Workflow document.
type stepSpec struct {
	Description       string            `json:"description"`
	TaskType          string            `json:"task_type"`
	Workflow          string            `json:"workflow"`
	DependsOn         []string          `json:"depends_on"`
	When              string            `json:"when"`
	OnUpstreamSkipped string            `json:"on_upstream_skipped"`
	Inputs            map[string]string `json:"inputs"`
	ForEach           string            `json:"for_each"`
	Concurrency       int               `json:"concurrency"`
	MaxItems          int               `json:"max_items"`
	MaxRetries        *int              `json:"max_retries"`
	Priority          *int              `json:"priority"`
	Sleep             *sleepSpec        `json:"sleep"`
	WaitForEvent      *eventWaitSpec    `json:"wait_for_event"`
	Approval          *approvalSpec     `json:"approval"`
}

// workflowCheck is the state of checking one Workflow document.
type workflowCheck struct {
	c        *checker
	d        *document
	w        *Workflow
	specs    map[string]stepSpec
	inputs   any                     // the inputs schema, as JSON values
	upstream map[string][]string     // step → every step it depends on, directly or not (sorted)
	outputs  map[string]reflect.Type // step → the type of its outputs
	cyclic   map[string]bool
	never    map[string]bool // step → its when can never be true (its schema rules it out)
	item     any             // the schema of item in the step being checked, nil if unknown
	itemOf   string          // the for_each that item comes from
	event    *Wait           // the wait_for_event step whose match is being checked
}

// compileWorkflow runs pass 2 over a Workflow document.
func (c *checker) compileWorkflow(d *document) *Workflow {
	s := decodeDocument[workflowSpec](c, d)
	w := &Workflow{
		named:       d.named(s.Name, s.Description),
		startRoles:  []string{RoleClient, RoleAdmin},
		signalRoles: []string{RoleClient, RoleAdmin},
		stepIndex:   map[string]*Step{},
	}
	if s.API.Start != nil {
		w.startRoles = slices.Clone(*s.API.Start)
	}
	if s.API.Signal != nil {
		w.signalRoles = slices.Clone(*s.API.Signal)
	}
	w.timeout, _ = c.duration(d, "/timeout", s.Timeout, DefaultWorkflowTimeout, minWorkflowTimeout, maxWorkflowTimeout)
	schemaName := "workflow:" + s.Name
	w.inputsRaw, w.inputs, w.inputsDoc = c.inputSchema(d, schemaName, s.Inputs)
	wc := &workflowCheck{
		c: c, d: d, w: w, specs: s.Steps,
		inputs:   w.inputsDoc[inputsSchemaURL(schemaName)],
		upstream: map[string][]string{},
		outputs:  map[string]reflect.Type{},
		cyclic:   map[string]bool{},
		never:    map[string]bool{},
	}
	names := sortedKeys(s.Steps)
	for _, name := range names {
		w.stepIndex[name] = wc.step(name, s.Steps[name])
	}
	order := wc.graph(names)
	for _, name := range order {
		wc.expressions(w.stepIndex[name])
	}
	wc.unreachable(order)
	wc.compileOutputs(s.Outputs)
	if d.failed {
		return nil
	}
	for _, name := range order {
		w.steps = append(w.steps, w.stepIndex[name])
	}
	return w
}

// stepPtr is the pointer of a step's field.
func stepPtr(step, field string) string {
	p := joinPointer("/steps", step)
	if field != "" {
		p += "/" + field
	}
	return p
}

// step checks what a step says of itself: its task type, its inputs against
// the task type's schema, its numbers.
func (wc *workflowCheck) step(name string, s stepSpec) *Step {
	c, d := wc.c, wc.d
	st := &Step{
		named:       named{name: name, description: s.Description, source: locationOf(d, stepPtr(name, ""))},
		dependsOn:   slices.Sorted(slices.Values(s.DependsOn)),
		onSkipped:   OnSkippedSkip,
		inputNames:  sortedKeys(s.Inputs),
		inputs:      map[string]*program{},
		concurrency: DefaultForEachConcurrency,
		maxItems:    DefaultMaxItems,
		maxRetries:  s.MaxRetries,
		priority:    s.Priority,
	}
	if s.OnUpstreamSkipped != "" {
		st.onSkipped = s.OnUpstreamSkipped
	}
	if s.Concurrency > 0 {
		st.concurrency = s.Concurrency
	}
	if s.MaxItems > 0 {
		st.maxItems = s.MaxItems
	}
	kind, ok := wc.stepKind(name, s)
	waits := ok && kind != StepKindTask && kind != StepKindWorkflow
	if waits {
		st.wait = wc.waitStep(name, kind, s)
	}
	if !ok || waits {
		wc.checkDependsOn(name, s)
		return st
	}
	if s.ForEach == "" {
		for _, field := range []string{"concurrency", "max_items"} {
			if _, set := d.lookup(stepPtr(name, field)); set {
				c.failKey(d, stepPtr(name, field), "only a for_each step runs items; this step has no for_each")
			}
		}
	}
	var t *TaskType
	switch {
	case s.Workflow != "":
		wc.childStep(st, name, s)
	case s.TaskType == "":
		c.fail(d, stepPtr(name, ""), "a step needs task_type (the task it runs) or workflow (the child run it starts)")
	default:
		t, _ = c.lookupTaskType(d, stepPtr(name, "task_type"), s.TaskType, false)
	}
	st.taskType = t
	if t != nil {
		c.checkMappedInputs(d, stepPtr(name, "inputs"), t, s.Inputs)
		if t.mode != "" && t.mode != "ASYNCHRONOUS" {
			c.fail(d, stepPtr(name, "task_type"), "task type %q is SYNCHRONOUS (it runs in front of its caller); a workflow step must be an ASYNCHRONOUS task type", t.name)
		}
	}
	wc.checkDependsOn(name, s)
	return st
}

// checkDependsOn fails a depends_on naming no step of the workflow.
func (wc *workflowCheck) checkDependsOn(name string, s stepSpec) {
	c, d := wc.c, wc.d
	for i, dep := range s.DependsOn {
		if _, ok := wc.specs[dep]; ok {
			continue
		}
		hint := "; the workflow's steps are " + strings.Join(sortedKeys(wc.specs), ", ")
		if sug, ok := suggest(dep, sortedKeys(wc.specs)); ok {
			hint = fmt.Sprintf("; did you mean %q?", sug)
		}
		c.fail(d, fmt.Sprintf("%s/%d", stepPtr(name, "depends_on"), i), "no step %q in this workflow%s", dep, hint)
	}
}

// locationOf is the position of the value at ptr of d.
func locationOf(d *document, ptr string) Location {
	p := d.keyAt(ptr)
	return Location{File: d.file, Line: p.Line, Col: p.Col}
}

// expressions checks and compiles a step's expressions against what they
// see: the run's inputs, its upstream steps' outputs (typed by their task
// types' outputs schemas) and, in a for_each step, the item.
func (wc *workflowCheck) expressions(st *Step) {
	s := wc.specs[st.name]
	fields := []field{
		{name: "run_id", typ: reflect.TypeFor[string]()},
		{name: "schema_name", typ: reflect.TypeFor[string]()},
		{name: "inputs", typ: schemaType(wc.inputs, 0)},
		{name: "steps", typ: wc.stepsType(st.name)},
	}
	if k := reflect.TypeFor[map[string]any](); fields[2].typ.Kind() != reflect.Struct {
		fields[2].typ = k
	}
	outputs := reflect.Type(anyType)
	if st.taskType != nil {
		outputs = schemaType(st.taskType.outputsDoc, 0)
	}
	if st.wait != nil {
		outputs = waitOutputs(st.wait)
		wc.waitExpressions(st, fields)
	}
	if s.Workflow != "" {
		outputs = childOutputsType(st.child)
	}
	wc.item, wc.itemOf = nil, ""
	if s.ForEach != "" {
		ptr := stepPtr(st.name, "for_each")
		p, t := wc.compile(ptr, s.ForEach, fields, resultAny)
		st.forEach = p
		if tree, err := parser.Parse(s.ForEach); err == nil {
			if names, _, ok := chainOf(tree.Node); ok {
				if list, found := wc.schemaOf(names); found {
					wc.item, wc.itemOf = itemsSchema(list), s.ForEach
				}
			}
		}
		item := anyType
		switch {
		case t != nil && !isList(t):
			wc.c.fail(wc.d, ptr, "for_each must return a list; %q returns %s", s.ForEach, kindName(t))
		case t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			item = t.Elem()
		}
		fields = append(fields, field{name: "item", typ: item}, field{name: "item_index", typ: reflect.TypeFor[int]()})
		outputs = reflect.SliceOf(outputs)
	}
	wc.outputs[st.name] = outputs
	if s.When != "" {
		ptr := stepPtr(st.name, "when")
		st.when, _ = wc.compile(ptr, s.When, fields, resultBool)
		if st.when != nil {
			wc.never[st.name] = wc.c.checkComparisons(wc.d, ptr, s.When, wc.schemaOf)
		}
		wc.checkStatusReads(ptr, s.When)
	}
	for _, name := range st.inputNames {
		ptr := joinPointer(stepPtr(st.name, "inputs"), name)
		var t reflect.Type
		st.inputs[name], t = wc.compile(ptr, s.Inputs[name], fields, resultAny)
		if st.inputs[name] == nil {
			continue
		}
		wc.c.checkComparisons(wc.d, ptr, s.Inputs[name], wc.schemaOf)
		wc.checkStatusReads(ptr, s.Inputs[name])
		if target := st.target(); target != nil {
			n := len(wc.c.errs)
			wc.c.checkInputType(wc.d, ptr, s.Inputs[name], t, target, name)
			if len(wc.c.errs) == n {
				wc.c.checkInputLiteral(wc.d, ptr, s.Inputs[name], target, name)
			}
		}
	}
}

// schemaOf is the schema of the value a chain of reads names in the step
// being checked: a part of the run's inputs, of an upstream step's outputs
// (a list of them for a for_each step) or of item. ok is false when no
// schema says.
func (wc *workflowCheck) schemaOf(names []string) (any, bool) {
	switch {
	case len(names) >= 1 && names[0] == "inputs":
		return schemaAt(wc.inputs, names[1:])
	case len(names) >= 1 && names[0] == "item" && wc.item != nil:
		return schemaAt(wc.item, names[1:])
	case len(names) >= 2 && names[0] == "event" && names[1] == "payload" && wc.event != nil && wc.event.payloadVal != nil:
		return schemaAt(wc.event.payloadVal, names[2:])
	case len(names) >= 3 && names[0] == "steps" && names[2] == "outputs":
		st, ok := wc.w.stepIndex[names[1]]
		if ok && st.wait != nil && st.wait.payloadVal != nil {
			return schemaAt(st.wait.payloadVal, names[3:])
		}
		if !ok || st.taskType == nil || st.taskType.outputsDoc == nil {
			return nil, false
		}
		out := st.taskType.outputsDoc
		if wc.specs[names[1]].ForEach != "" {
			out = map[string]any{"type": "array", "items": out}
		}
		return schemaAt(out, names[3:])
	}
	return nil, false
}

// stepsType is the type of steps in the expressions of step name: a field
// for each upstream step, with its status and typed outputs.
func (wc *workflowCheck) stepsType(name string) reflect.Type {
	var fields []field
	for _, up := range wc.upstream[name] {
		out, ok := wc.outputs[up]
		if !ok {
			out = anyType
		}
		fields = append(fields, field{name: up, typ: structType([]field{
			{name: "outputs", typ: out},
			{name: "status", typ: reflect.TypeFor[string]()},
		})})
	}
	return structType(fields)
}

// anonStructRE finds expr's names for the struct types made here.
var anonStructRE = regexp.MustCompile(`type struct \{.*\} has no field (\S+)$`)

// compile checks the expression at ptr against the typed environment of
// fields (reads of undeclared steps and properties first, for messages in
// the author's words) and compiles it to run. t is the type the expression
// returns, nil when unknown or when it did not compile.
func (wc *workflowCheck) compile(ptr, source string, fields []field, result resultKind) (*program, reflect.Type) {
	c, d := wc.c, wc.d
	if !wc.checkReads(ptr, source, fields) {
		d.failed = true
		return nil, nil
	}
	env := reflect.New(structType(fields)).Elem().Interface()
	typed, err := d.compileExpression(ptr, source, env, result)
	switch {
	case err != nil && anonStructRE.MatchString(err.Message):
		m := anonStructRE.FindStringSubmatch(err.Message)
		err.Message = strings.Replace(err.Message, m[0], "the value has no field "+m[1], 1)
		c.failAt(d, ptr, err)
		return nil, nil
	case err != nil && typingArtefact(err.Message):
		typed = nil // len or keys of an object, a map at run time: checked then
	case err != nil:
		c.failAt(d, ptr, err)
		return nil, nil
	}
	p, rerr := compileRuntime(source, result)
	if rerr != nil {
		c.fail(d, ptr, "%v", rerr)
		return nil, nil
	}
	return p, typed.resultType()
}

// read is one chain of property reads in an expression: a.b.c.
type read struct {
	names   []string
	offsets []int // 0-based column of each name in the expression
}

// readChains collects the property chains an expression reads from its
// variables (steps.ingest.outputs.table), longest first.
type readChains struct{ reads []read }

// Visit implements ast.Visitor.
func (v *readChains) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	var r read
	var node ast.Node = m
	for {
		switch x := node.(type) {
		case *ast.MemberNode:
			prop, ok := x.Property.(*ast.StringNode)
			if !ok {
				r = read{} // an index: only what follows it is checked
				node = x.Node
				continue
			}
			r.names = append([]string{prop.Value}, r.names...)
			r.offsets = append([]int{prop.Location().From}, r.offsets...)
			node = x.Node
			continue
		case *ast.IdentifierNode:
			r.names = append([]string{x.Value}, r.names...)
			r.offsets = append([]int{x.Location().From}, r.offsets...)
			v.reads = append(v.reads, r)
		}
		return
	}
}

// checkReads reports the reads of an expression that its environment
// cannot satisfy: a step that is not upstream, a property the schema does
// not declare. It reports false when it found any.
func (wc *workflowCheck) checkReads(ptr, source string, fields []field) bool {
	v := &readChains{}
	if !walkSource(source, v) {
		return true // the compile reports it
	}
	ok := true
	seen := map[string]bool{}
	for _, r := range v.reads {
		at, msg := wc.badRead(r, fields)
		if msg == "" || seen[msg] {
			continue
		}
		seen[msg] = true
		ok = false
		p := wc.d.at(ptr)
		if exact, found := wc.d.exprPos(ptr, source, 1, r.offsets[at]); found {
			p = exact
		}
		wc.c.add(wc.d, ptr, wc.d.errorAt(p, "%s%s", prefixPath(fieldPath(wc.d.value, ptr)), msg))
	}
	return ok
}

// badRead checks one chain of reads; it returns the index of the name at
// fault and why, or "" when the chain is fine.
func (wc *workflowCheck) badRead(r read, fields []field) (int, string) {
	if len(r.names) < 2 {
		return 0, ""
	}
	switch r.names[0] {
	case "steps":
		name := r.names[1]
		if _, exists := wc.specs[name]; !exists {
			hint := ""
			if sug, ok := suggest(name, sortedKeys(wc.specs)); ok {
				hint = fmt.Sprintf("; did you mean steps.%s?", sug)
			}
			return 1, fmt.Sprintf("reads steps.%s, but the workflow has no step %s%s", name, name, hint)
		}
		if !wc.upstreamIn(fields, name) {
			return 1, fmt.Sprintf("reads steps.%s, but step %s is not upstream of this step; add it to depends_on (directly or through a step this one depends on)", name, name)
		}
		if len(r.names) < 3 {
			return 0, ""
		}
		if r.names[2] != "outputs" && r.names[2] != "status" {
			return 2, fmt.Sprintf("steps.%s has no field %s; a step has outputs and status", name, r.names[2])
		}
		if r.names[2] == "status" || len(r.names) < 4 {
			return 0, ""
		}
		t := wc.w.stepIndex[name]
		if t.forEach != nil || wc.specs[name].ForEach != "" {
			return 3, fmt.Sprintf("steps.%s.outputs is a list (step %s runs for_each), so it has no field %s; read an item with [i], or map over it", name, name, r.names[3])
		}
		if t.wait != nil && t.wait.payloadVal != nil {
			return wc.schemaRead(r, 3, t.wait.payloadVal, "steps."+name+".outputs", fmt.Sprintf("the payload schema of step %s", name))
		}
		if t.child != nil {
			return childRead(r, t.child, name)
		}
		if t.taskType == nil {
			return 0, ""
		}
		return wc.schemaRead(r, 3, t.taskType.outputsDoc, "steps."+name+".outputs", fmt.Sprintf("the outputs schema of task type %s", t.taskType.name))
	case "inputs":
		return wc.schemaRead(r, 1, wc.inputs, "inputs", "the workflow's inputs schema")
	case "event":
		return wc.eventRead(r)
	case "item":
		if wc.item != nil {
			return wc.schemaRead(r, 1, wc.item, "item", fmt.Sprintf("the items schema of for_each %q", wc.itemOf))
		}
	}
	return 0, ""
}

// upstreamIn reports whether the steps field of an environment has step name.
func (wc *workflowCheck) upstreamIn(fields []field, name string) bool {
	for _, f := range fields {
		if f.name != "steps" {
			continue
		}
		for i := range f.typ.NumField() {
			if f.typ.Field(i).Tag.Get("expr") == name {
				return true
			}
		}
	}
	return false
}

// schemaRead walks the names of r from index i down schema: each must be a
// property the schema declares, when it declares properties.
func (wc *workflowCheck) schemaRead(r read, i int, schema any, path, what string) (int, string) {
	for ; i < len(r.names); i++ {
		m, ok := schema.(map[string]any)
		if !ok {
			return 0, ""
		}
		if typ, _ := m["type"].(string); typ == "array" {
			return i, fmt.Sprintf("%s is a list (per %s), so it has no field %s", path, what, r.names[i])
		}
		props, ok := m["properties"].(map[string]any)
		if !ok || len(props) == 0 {
			return 0, ""
		}
		name := r.names[i]
		sub, declared := props[name]
		if !declared {
			known := sortedKeys(props)
			hint := "; it declares " + strings.Join(known, ", ")
			if sug, ok := suggest(name, known); ok {
				hint = fmt.Sprintf("; did you mean %s.%s?", path, sug)
			}
			return i, fmt.Sprintf("reads %s.%s, but %s declares no property %s%s", path, name, what, name, hint)
		}
		path += "." + name
		schema = sub
	}
	return 0, ""
}
