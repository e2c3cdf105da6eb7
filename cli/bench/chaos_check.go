package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
)

// maxViolationsPerCheck bounds how many violations of one invariant are
// listed (the count says how many there were).
const maxViolationsPerCheck = 20

// check checks the invariants once everything has settled (RunChaos).
func (c *chaos) check(ctx context.Context) error {
	if err := c.checkRuns(); err != nil {
		return err
	}
	if err := c.checkTasks(ctx); err != nil {
		return err
	}
	if err := c.checkEvents(ctx); err != nil {
		return err
	}
	return c.checkTicks(ctx)
}

// limited reports the first maxViolationsPerCheck of msgs, then how many
// more there were.
func (c *chaos) limited(msgs []string) {
	for i, m := range msgs {
		if i == maxViolationsPerCheck {
			c.violate("... and %d more like these", len(msgs)-i)
			return
		}
		c.violate("%s", m)
	}
}

// checkRuns reads the run log in order: a task runs again only when the
// instance of its previous run was killed, and two runs of one task never
// overlap (a run ends before the next one starts, or its instance was
// killed and it never ends).
func (c *chaos) checkRuns() error {
	f, err := os.Open(c.logPath)
	if err != nil {
		return fmt.Errorf("error reading the run log: %w", err)
	}
	defer f.Close()
	type state struct {
		open string // the generation of the run that has not ended
		last string // the generation of the latest run
	}
	tasks := map[string]*state{}
	var msgs []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 {
			msgs = append(msgs, fmt.Sprintf("run log line %d is malformed: %q", line, sc.Text()))
			continue
		}
		kind, id, gen := fields[0], fields[1], fields[3]
		st := tasks[id]
		if st == nil {
			st = &state{}
			tasks[id] = st
		}
		switch kind {
		case "start":
			c.res.Runs++
			if st.last != "" {
				c.res.Reruns++
				if !c.killed[st.last] {
					msgs = append(msgs, fmt.Sprintf("task %s ran again (under %s) after a run under %s, which was not killed", id, gen, st.last))
				}
			}
			if st.open != "" && !c.killed[st.open] {
				msgs = append(msgs, fmt.Sprintf("task %s started under %s while its run under %s was still going", id, gen, st.open))
			}
			st.open, st.last = gen, gen
		case "end":
			if st.open != gen {
				msgs = append(msgs, fmt.Sprintf("task %s: a run under %s ended after another run (under %s) had started: two runs at once", id, gen, st.last))
			}
			st.open = ""
		default:
			msgs = append(msgs, fmt.Sprintf("run log line %d is malformed: %q", line, sc.Text()))
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("error reading the run log: %w", err)
	}
	c.limited(msgs)
	return nil
}

// checkTasks: every acknowledged task exists and is COMPLETED, and nothing
// else is left unfinished.
func (c *chaos) checkTasks(ctx context.Context) error {
	statuses, err := c.env.store.TaskStatuses(ctx, c.acked)
	if err != nil {
		return err
	}
	var msgs []string
	seen := map[uuid.UUID]bool{}
	for _, id := range c.acked {
		if seen[id] {
			continue // a deduplicated enqueue answered with a task already listed
		}
		seen[id] = true
		switch st, ok := statuses[id]; {
		case !ok:
			msgs = append(msgs, fmt.Sprintf("acknowledged task %s is lost", id))
		case st != "COMPLETED":
			msgs = append(msgs, fmt.Sprintf("acknowledged task %s is %s", id, st))
		}
	}
	c.limited(msgs)
	// The schedule fires on after the drain: its newest tasks may run still.
	left, err := c.env.store.UnsettledTasks(ctx, c.settled, maxViolationsPerCheck)
	if err != nil {
		return err
	}
	for _, t := range left {
		c.violate("not COMPLETED: %s", t)
	}
	return nil
}

// checkEvents: each acknowledged event created exactly one task, an event
// whose emit failed at most one, and no task exists for an event never
// emitted.
func (c *chaos) checkEvents(ctx context.Context) error {
	counts, err := c.env.store.TasksPerInput(ctx, chaosOnEvent)
	if err != nil {
		return err
	}
	var msgs []string
	for n, acked := range c.emitted {
		switch got := counts[n]; {
		case acked && got != 1:
			msgs = append(msgs, fmt.Sprintf("acknowledged event n=%d created %d tasks, want 1", n, got))
		case !acked && got > 1:
			msgs = append(msgs, fmt.Sprintf("event n=%d (emit failed) created %d tasks, want at most 1", n, got))
		}
	}
	for n := range counts {
		if _, ok := c.emitted[n]; !ok {
			msgs = append(msgs, fmt.Sprintf("a task exists for event n=%d, which was never emitted", n))
		}
	}
	c.limited(msgs)
	return nil
}

// checkTicks: the schedule's ticks are consecutive steps of 2 seconds (none
// lost, none twice), each with one COMPLETED task, and it kept firing to
// the end of the faults.
func (c *chaos) checkTicks(ctx context.Context) error {
	ticks, err := c.env.store.FiredTicks(ctx, chaosSchedule)
	if err != nil {
		return err
	}
	c.res.Ticks = len(ticks)
	if len(ticks) == 0 {
		c.violate("schedule %s never fired", chaosSchedule)
		return nil
	}
	var msgs []string
	tasks := map[uuid.UUID]bool{}
	for i, t := range ticks {
		if i > 0 && t.At.Sub(ticks[i-1].At) != chaosTickStep {
			msgs = append(msgs, fmt.Sprintf("schedule %s: tick %s follows %s (want %s apart)", chaosSchedule,
				t.At.Format(time.RFC3339), ticks[i-1].At.Format(time.RFC3339), chaosTickStep))
		}
		switch {
		case t.TaskID == nil:
			msgs = append(msgs, fmt.Sprintf("tick %s has no task", t.At.Format(time.RFC3339)))
		case tasks[*t.TaskID]:
			msgs = append(msgs, fmt.Sprintf("tick %s shares its task with another tick", t.At.Format(time.RFC3339)))
		case (t.TaskStatus == nil || *t.TaskStatus != "COMPLETED") && t.FiredAt.Before(c.settled):
			msgs = append(msgs, fmt.Sprintf("the task of tick %s is not COMPLETED", t.At.Format(time.RFC3339)))
		}
		if t.TaskID != nil {
			tasks[*t.TaskID] = true
		}
	}
	// A leader resumes missed ticks up to two minutes old (its catch-up):
	// a schedule whose last tick is older than that at the end of the
	// faults stopped firing.
	if last := ticks[len(ticks)-1].At; c.faultsEnd.Sub(last) > 2*time.Minute {
		msgs = append(msgs, fmt.Sprintf("schedule %s stopped firing: last tick %s", chaosSchedule, last.Format(time.RFC3339)))
	}
	c.limited(msgs)
	return nil
}

// WriteText prints the result for a reader.
func (r *ChaosResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "chaos: %s of faults on %d instances (seed %d)\n", r.Duration.Round(time.Second), r.Instances, r.Seed)
	fmt.Fprintf(w, "  faults:     %d SIGKILLs, %d leader sessions ended, %d PostgreSQL restarts; %d instances exited and were restarted\n",
		r.Kills, r.LeaderTerminations, r.PostgresRestarts, r.SelfExits)
	fmt.Fprintf(w, "  workload:   %d tasks enqueued (%d enqueues failed), %d events emitted (%d failed), %d schedule ticks\n",
		r.Enqueued, r.EnqueueFailed, r.Emitted, r.EmitFailed, r.Ticks)
	fmt.Fprintf(w, "  runs:       %d handler runs, %d re-runs; %d dedup samples; settled %s after the faults\n",
		r.Runs, r.Reruns, r.DuplicateKeySamples, r.Drained.Round(100*time.Millisecond))
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "  violations: none")
		return
	}
	fmt.Fprintf(w, "  violations: %d\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(w, "    - %s\n", v)
	}
}
