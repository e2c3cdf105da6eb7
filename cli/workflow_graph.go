package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/wfhq/wf/engine/spec"
)

// writeWorkflowsText prints each workflow and its graph: the steps in the
// order they can run, each with what it waits for and what it starts.
func writeWorkflowsText(b *strings.Builder, set *spec.Set) {
	writeSpecsText(b, "workflows", "none", set.Workflows(), func(w *spec.Workflow) {
		if w.Description() != "" {
			fmt.Fprintf(b, "    %s\n", w.Description())
		}
		roles := strings.Join(w.StartRoles(), ", ")
		if roles == "" {
			roles = "wf only"
		}
		fmt.Fprintf(b, "    timeout %s, started over the API by: %s\n", spec.FormatDuration(w.Timeout()), roles)
		fmt.Fprintf(b, "    inputs: %s\n", w.InputSchema())
		writeWorkflowGraphText(b, w, "    ")
		exprs := w.OutputExprs()
		for _, name := range sortedNames(exprs) {
			fmt.Fprintf(b, "    output %s = %s\n", name, exprs[name])
		}
	})
}

// writeWorkflowGraphText draws a workflow's steps in topological order:
//
//	ingest (ingest)
//	├─▶ gdal
//	└─▶ index
func writeWorkflowGraphText(b *strings.Builder, w *spec.Workflow, indent string) {
	for _, s := range w.Steps() {
		fmt.Fprintf(b, "%s%s  (%s)%s\n", indent, s.Name(), stepWhat(s), stepDetails(s))
		if exprs := s.InputExprs(); len(exprs) > 0 {
			for _, name := range sortedNames(exprs) {
				fmt.Fprintf(b, "%s│   input %s = %s\n", indent, name, exprs[name])
			}
		}
		next := s.Dependants()
		for i, d := range next {
			branch := "├─▶ "
			if i == len(next)-1 {
				branch = "└─▶ "
			}
			fmt.Fprintf(b, "%s%s%s\n", indent, branch, d)
		}
	}
}

// stepDetails describes what is particular about a step, after its name.
func stepDetails(s *spec.Step) string {
	var parts []string
	if s.WhenExpr() != "" {
		parts = append(parts, "when "+s.WhenExpr())
	}
	if s.IsForEach() {
		parts = append(parts, fmt.Sprintf("for each of %s, %d at once", s.ForEachExpr(), s.Concurrency()))
	}
	if len(s.DependsOn()) > 0 && s.OnUpstreamSkipped() == spec.OnSkippedRun {
		parts = append(parts, "runs when an upstream step is skipped")
	}
	if t := s.TaskType(); t != nil && s.MaxRetries() != t.MaxRetries() {
		parts = append(parts, "retries "+strconv.Itoa(s.MaxRetries()))
	}
	if t := s.TaskType(); t != nil && s.Priority() != t.Priority() {
		parts = append(parts, "priority "+strconv.Itoa(s.Priority()))
	}
	parts = append(parts, waitDetails(s)...)
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, "; ")
}

// writeWorkflowsDOT prints every workflow as a Graphviz digraph: a box per
// step (labelled with its task type, dashed when conditional, stacked when
// it runs for each item of a list) and an edge per dependency.
func writeWorkflowsDOT(w io.Writer, set *spec.Set) error {
	var b strings.Builder
	for _, wf := range set.Workflows() {
		fmt.Fprintf(&b, "digraph %s {\n", dotID(wf.Name()))
		fmt.Fprintf(&b, "  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n")
		for _, s := range wf.Steps() {
			label := s.Name() + "\n(" + stepWhat(s) + ")"
			attrs := []string{}
			if s.IsForEach() {
				label += "\nfor each " + s.ForEachExpr()
				attrs = append(attrs, "shape=box3d")
			}
			if s.WhenExpr() != "" {
				label += "\nwhen " + s.WhenExpr()
				attrs = append(attrs, "style=dashed")
			}
			attrs = append([]string{"label=" + dotID(label)}, attrs...)
			fmt.Fprintf(&b, "  %s [%s];\n", dotID(s.Name()), strings.Join(attrs, ", "))
		}
		for _, s := range wf.Steps() {
			for _, d := range s.Dependants() {
				fmt.Fprintf(&b, "  %s -> %s;\n", dotID(s.Name()), dotID(d))
			}
		}
		fmt.Fprintf(&b, "}\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// dotID quotes a DOT identifier.
func dotID(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
