package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// writeRunOrigin prints what started a run (an event through a
// subscription, a schedule's tick, a parent run's step) and the outputs it
// completed with.
func writeRunOrigin(b *strings.Builder, s workflow.Status) {
	r := s.Run
	if by := r.StartedBy; by != nil {
		switch by.Kind {
		case wftype.TriggerEvent:
			fmt.Fprintf(b, "  started by: event %s (%s), subscription %s\n", by.EventID, by.EventType, by.Subscription)
		case wftype.TriggerSchedule:
			tick := ""
			if by.Tick != nil {
				tick = by.Tick.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(b, "  started by: schedule %s, tick %s\n", by.Schedule, tick)
		}
	}
	if r.ParentRunID != nil {
		item := ""
		if r.ParentItem >= 0 {
			item = fmt.Sprintf(", item %d", r.ParentItem)
		}
		fmt.Fprintf(b, "  parent: run %s, step %s%s (wf workflows show %s)\n", r.ParentRunID, r.ParentStep, item, r.ParentRunID)
	}
	if len(r.Outputs) > 0 && string(r.Outputs) != "null" {
		fmt.Fprintf(b, "  outputs: %s\n", redact.JSON(r.Outputs))
	}
}

// writeChildRuns prints the child runs of a run's workflow steps.
func writeChildRuns(b *strings.Builder, s workflow.Status) {
	if len(s.Children) == 0 {
		return
	}
	b.WriteString("  child runs:\n")
	for _, c := range s.Children {
		item := ""
		if c.ParentItem >= 0 {
			item = fmt.Sprintf(" item %d", c.ParentItem)
		}
		fmt.Fprintf(b, "    %s  step %s%s  %s  %s\n", c.ID, c.ParentStep, item, c.Workflow, c.Status)
	}
}
