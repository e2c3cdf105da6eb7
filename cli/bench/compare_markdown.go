package bench

import (
	"fmt"
	"io"
	"strings"
)

// CompareMarkdown renders a comparison: the ratios, every run, the machine.
func CompareMarkdown(c *Comparison) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("Measured on %s in %.0f s: %d no-op tasks per burn-down, %d round(s), each run in a fresh database of its own on one durable PostgreSQL; machine load average %.1f at the start, %.1f at the end.\n\n",
		c.Started.Format("2006-01-02 15:04 MST"), c.Seconds, c.Tasks, c.Rounds, c.LoadBefore, c.LoadAfter)
	p("| ratio (medians) | goal | wf | %s | ratio | |\n|---|---:|---:|---:|---:|---|\n", c.Rival)
	for _, r := range c.Ratios {
		goal, mark := fmt.Sprintf("≥ %.1f×", r.Goal), "❌ missed"
		switch {
		case r.Goal == 0:
			goal, mark = "—", "(before, for comparison)"
		case r.Met:
			mark = "✅ met"
		}
		p("| %s | %s | %.0f/s | %.0f/s | %.2f× | %s |\n", r.Name, goal, r.Wf, r.Rival, r.Ratio, mark)
	}
	p("\n| run | round | enqueued/s | completed/s | PostgreSQL CPU s | bench CPU s |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range c.Runs {
		p("| %s | %d | %.0f | %.0f | %.1f | %.1f |\n", r.Name, r.Round, r.EnqueueRate, r.CompleteRate, r.PostgresSeconds, r.BenchSeconds)
	}
	m := c.Machine
	p("\n%d CPUs, %s; %s; PostgreSQL %s.\n", m.CPUs, m.CPUModel, m.GoVersion, shortVersion(c.Postgres.Version))
	return b.String()
}

// WriteText prints the comparison's ratios for a person.
func (c *Comparison) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\n%d tasks per burn-down, %d round(s), %.0f s; load average %.1f → %.1f\n", c.Tasks, c.Rounds, c.Seconds, c.LoadBefore, c.LoadAfter)
	for _, r := range c.Ratios {
		goal := fmt.Sprintf("goal ≥ %.1f×", r.Goal)
		if r.Goal == 0 {
			goal = "before, for comparison"
		}
		fmt.Fprintf(w, "  %-60s %8.0f/s vs %8.0f/s  %.2f× (%s)\n", r.Name, r.Wf, r.Rival, r.Ratio, goal)
	}
}
