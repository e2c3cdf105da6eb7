package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
)

// This file holds the checks of a workflow's graph: cycles (reported at the
// depends_on that closes them), the topological order, and the steps that
// can never run.

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
	v := &variableUse{}
	if !walkSource(source, v) {
		return false, false
	}
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
