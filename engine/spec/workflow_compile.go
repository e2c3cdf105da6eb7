package spec

import (
	"encoding/json"
	"fmt"
	"maps"
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
		Start *[]string `json:"start"`
	} `json:"api"`
	Steps map[string]stepSpec `json:"steps"`
}

// stepSpec is the shape of one step of a Workflow document.
type stepSpec struct {
	Description       string            `json:"description"`
	TaskType          string            `json:"task_type"`
	DependsOn         []string          `json:"depends_on"`
	When              string            `json:"when"`
	OnUpstreamSkipped string            `json:"on_upstream_skipped"`
	Inputs            map[string]string `json:"inputs"`
	ForEach           string            `json:"for_each"`
	Concurrency       int               `json:"concurrency"`
	MaxItems          int               `json:"max_items"`
	MaxRetries        *int              `json:"max_retries"`
	Priority          *int              `json:"priority"`
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
	never    map[string]bool // step → its when can never be true (an enum rules it out)
	item     any             // the schema of item in the step being checked, nil if unknown
	itemOf   string          // the for_each that item comes from
}

// compileWorkflow runs pass 2 over a Workflow document.
func (c *checker) compileWorkflow(d *document) *Workflow {
	s := decodeDocument[workflowSpec](c, d)
	w := &Workflow{
		named:      d.named(s.Name, s.Description),
		startRoles: []string{RoleClient, RoleAdmin},
		stepIndex:  map[string]*Step{},
	}
	if s.API.Start != nil {
		w.startRoles = slices.Clone(*s.API.Start)
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
	if s.ForEach == "" {
		for _, field := range []string{"concurrency", "max_items"} {
			if _, set := d.lookup(stepPtr(name, field)); set {
				c.failKey(d, stepPtr(name, field), "only a for_each step runs items; this step has no for_each")
			}
		}
	}
	t, _ := c.lookupTaskType(d, stepPtr(name, "task_type"), s.TaskType, false)
	st.taskType = t
	if t != nil {
		c.checkMappedInputs(d, stepPtr(name, "inputs"), t, s.Inputs)
		if t.mode != "" && t.mode != "ASYNCHRONOUS" {
			c.fail(d, stepPtr(name, "task_type"), "task type %q is SYNCHRONOUS (it runs in front of its caller); a workflow step must be an ASYNCHRONOUS task type", t.name)
		}
	}
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
	return st
}

// locationOf is the position of the value at ptr of d.
func locationOf(d *document, ptr string) Location {
	p := d.keyAt(ptr)
	return Location{File: d.file, Line: p.Line, Col: p.Col}
}

// graph finds cycles, computes every step's upstream steps and dependants,
// and returns the steps in topological order (ties by name); the steps of a
// cycle come last.
func (wc *workflowCheck) graph(names []string) []string {
	deps := func(n string) []string {
		var out []string
		for _, dep := range wc.w.stepIndex[n].dependsOn {
			if _, ok := wc.specs[dep]; ok {
				out = append(out, dep)
			}
		}
		return out
	}
	// Kahn's algorithm, taking the smallest name first.
	waiting := map[string]int{}
	dependants := map[string][]string{}
	for _, n := range names {
		ds := deps(n)
		waiting[n] = len(ds)
		for _, dep := range ds {
			dependants[dep] = append(dependants[dep], n)
		}
	}
	for _, n := range names {
		wc.w.stepIndex[n].dependants = slices.Sorted(slices.Values(dependants[n]))
	}
	var order, ready []string
	for _, n := range names {
		if waiting[n] == 0 {
			ready = append(ready, n)
		}
	}
	for len(ready) > 0 {
		slices.Sort(ready)
		n := ready[0]
		ready = ready[1:]
		order = append(order, n)
		up := map[string]bool{}
		for _, dep := range deps(n) {
			up[dep] = true
			for _, u := range wc.upstream[dep] {
				up[u] = true
			}
		}
		wc.upstream[n] = slices.Sorted(maps.Keys(up))
		for _, m := range dependants[n] {
			waiting[m]--
			if waiting[m] == 0 {
				ready = append(ready, m)
			}
		}
	}
	if len(order) == len(names) {
		return order
	}
	// The rest are in a cycle or downstream of one: report each cycle once,
	// at the edge that closes it (closingEdge), looking for cycles from the
	// step written first.
	rest := map[string]bool{}
	for _, n := range names {
		if !slices.Contains(order, n) {
			rest[n] = true
		}
	}
	reported := map[string]bool{}
	for _, n := range wc.inFileOrder(names) {
		if !rest[n] || reported[n] {
			continue
		}
		cycle := wc.findCycle(n, deps, rest)
		if cycle == nil {
			continue
		}
		for _, m := range cycle {
			reported[m] = true
			wc.cyclic[m] = true
		}
		k := wc.closingEdge(cycle, deps)
		cycle = append(cycle[k:], cycle[:k]...)
		from, to := cycle[0], cycle[1%len(cycle)]
		i := slices.Index(wc.specs[from].DependsOn, to)
		c := append(slices.Clone(cycle), from)
		wc.c.fail(wc.d, fmt.Sprintf("%s/%d", stepPtr(from, "depends_on"), i), "depends_on forms a cycle: %s; a step cannot wait for itself", strings.Join(c, " -> "))
	}
	for _, n := range names {
		if rest[n] {
			order = append(order, n)
		}
	}
	return order
}

// inFileOrder sorts step names by where the steps are written.
func (wc *workflowCheck) inFileOrder(names []string) []string {
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int {
		return comparePos(wc.d.keyAt(stepPtr(a, "")), wc.d.keyAt(stepPtr(b, "")))
	})
	return out
}

// comparePos orders positions in a file.
func comparePos(a, b pos) int {
	if a.Line != b.Line {
		return a.Line - b.Line
	}
	return a.Col - b.Col
}

// closingEdge returns the index i of the edge cycle[i] -> cycle[i+1] that
// closes a cycle: the edge that goes against the order the workflow is
// written in. Most workflows list a step after the steps it waits for, so
// there the closing edge is a step waiting for one written below it (or for
// itself); a workflow written the other way round (its edges mostly point
// down) is closed by an edge pointing up. Of several such edges, the one
// written last closes the cycle.
func (wc *workflowCheck) closingEdge(cycle []string, deps func(string) []string) int {
	rank := map[string]int{}
	for i, n := range wc.inFileOrder(sortedKeys(wc.specs)) {
		rank[n] = i
	}
	up, down := 0, 0
	for name := range wc.specs {
		for _, dep := range deps(name) {
			switch {
			case rank[dep] < rank[name]:
				up++
			case rank[dep] > rank[name]:
				down++
			}
		}
	}
	against := func(from, to string) bool {
		if up >= down {
			return rank[to] >= rank[from]
		}
		return rank[to] <= rank[from]
	}
	edgeAt := func(i int) pos {
		from, to := cycle[i], cycle[(i+1)%len(cycle)]
		return wc.d.at(fmt.Sprintf("%s/%d", stepPtr(from, "depends_on"), slices.Index(wc.specs[from].DependsOn, to)))
	}
	best := -1
	for i := range cycle {
		if against(cycle[i], cycle[(i+1)%len(cycle)]) && (best < 0 || comparePos(edgeAt(i), edgeAt(best)) > 0) {
			best = i
		}
	}
	if best >= 0 {
		return best
	}
	for i := range cycle { // none goes against the order: the one written last
		if best < 0 || comparePos(edgeAt(i), edgeAt(best)) > 0 {
			best = i
		}
	}
	return best
}

// findCycle returns a cycle through start, as the steps in depends_on
// order (start, a step start depends on, ...), or nil when start is only
// downstream of one.
func (wc *workflowCheck) findCycle(start string, deps func(string) []string, rest map[string]bool) []string {
	var path []string
	seen := map[string]bool{}
	var walk func(n string) bool
	walk = func(n string) bool {
		path = append(path, n)
		seen[n] = true
		for _, dep := range deps(n) {
			if dep == start {
				return true
			}
			if rest[dep] && !seen[dep] && walk(dep) {
				return true
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if walk(start) {
		return path
	}
	return nil
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
			wc.never[st.name] = wc.c.checkEnumComparisons(wc.d, ptr, s.When, wc.schemaOf)
		}
	}
	for _, name := range st.inputNames {
		ptr := joinPointer(stepPtr(st.name, "inputs"), name)
		var t reflect.Type
		st.inputs[name], t = wc.compile(ptr, s.Inputs[name], fields, resultAny)
		if st.inputs[name] == nil {
			continue
		}
		wc.c.checkEnumComparisons(wc.d, ptr, s.Inputs[name], wc.schemaOf)
		if st.taskType != nil {
			wc.c.checkInputType(wc.d, ptr, s.Inputs[name], t, st.taskType, name)
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
	case len(names) >= 3 && names[0] == "steps" && names[2] == "outputs":
		st, ok := wc.w.stepIndex[names[1]]
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
	if err != nil {
		if m := anonStructRE.FindStringSubmatch(err.Message); m != nil {
			err.Message = strings.Replace(err.Message, m[0], "the value has no field "+m[1], 1)
		}
		c.failAt(d, ptr, err)
		return nil, nil
	}
	p, rerr := compileRuntime(source, result)
	if rerr != nil {
		c.fail(d, ptr, "%v", rerr)
		return nil, nil
	}
	var t reflect.Type
	if n := typed.prog.Node(); n != nil {
		t = n.Type()
	}
	return p, t
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
	tree, err := parser.Parse(source)
	if err != nil {
		return true // the compile reports it
	}
	v := &readChains{}
	ast.Walk(&tree.Node, v)
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
		if t.taskType == nil {
			return 0, ""
		}
		return wc.schemaRead(r, 3, t.taskType.outputsDoc, "steps."+name+".outputs", fmt.Sprintf("the outputs schema of task type %s", t.taskType.name))
	case "inputs":
		return wc.schemaRead(r, 1, wc.inputs, "inputs", "the workflow's inputs schema")
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

// unreachable reports steps that can never run: a step whose when is always
// false, and a step that waits on a step that never runs (in a cycle, or
// never running itself) and skips when it is skipped.
func (wc *workflowCheck) unreachable(order []string) {
	never := map[string]string{} // step → why it never runs
	for _, name := range order {
		st := wc.w.stepIndex[name]
		if wc.cyclic[name] {
			never[name] = "is in a cycle"
			continue
		}
		if wc.never[name] {
			never[name] = "never runs (its when can never be true)"
			continue
		}
		if st.when != nil {
			if b, ok := constantBool(st.when.source); ok && !b {
				wc.c.fail(wc.d, stepPtr(name, "when"), "is always false, so step %s never runs and is unreachable; remove the step or fix the condition", name)
				never[name] = "never runs (its when is always false)"
				continue
			}
		}
		for _, dep := range st.dependsOn {
			why, blocked := never[dep]
			if !blocked || (st.onSkipped == OnSkippedRun && !wc.cyclic[dep]) {
				continue
			}
			i := slices.Index(wc.specs[name].DependsOn, dep)
			wc.c.fail(wc.d, fmt.Sprintf("%s/%d", stepPtr(name, "depends_on"), i), "step %s is unreachable: it waits for step %s, which %s", name, dep, why)
			never[name] = "is unreachable"
			break
		}
	}
}

// constantBool reports whether an expression is a boolean constant (false,
// 1 > 2, true && false: it reads no variable and calls no function), and
// which.
func constantBool(source string) (value, ok bool) {
	tree, err := parser.Parse(source)
	if err != nil {
		return false, false
	}
	v := &variableUse{}
	ast.Walk(&tree.Node, v)
	if v.used {
		return false, false
	}
	p, err := compileRuntime(source, resultBool)
	if err != nil {
		return false, false
	}
	out, err := p.run(map[string]any{})
	if err != nil {
		return false, false
	}
	return out.(bool), true
}

// variableUse finds whether an expression reads a variable or calls a
// function (whose result may change).
type variableUse struct{ used bool }

// Visit implements ast.Visitor.
func (v *variableUse) Visit(n *ast.Node) {
	switch (*n).(type) {
	case *ast.IdentifierNode, *ast.CallNode, *ast.BuiltinNode, *ast.PointerNode:
		v.used = true
	}
}
