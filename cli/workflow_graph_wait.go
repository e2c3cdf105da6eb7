package cli

import (
	"github.com/wfhq/wf/engine/spec"
)

// stepWhat names what a step does in a workflow's graph: its task type, or
// its wait ("sleep 10m", "wait_for_event order.paid", "approval signal
// approve").
func stepWhat(s *spec.Step) string {
	if c := s.Child(); c != nil {
		return "workflow " + c.Name()
	}
	w := s.Wait()
	if w == nil {
		return s.TaskType().Name()
	}
	switch w.Kind() {
	case spec.StepKindSleep:
		if w.UntilExpr() != "" {
			return "sleep until " + w.UntilExpr()
		}
		return "sleep " + spec.FormatDuration(w.Duration())
	case spec.StepKindEvent:
		return "wait_for_event " + w.EventType()
	}
	return "approval signal " + w.Signal()
}

// waitDetails describes a wait step's match and timeout.
func waitDetails(s *spec.Step) []string {
	w := s.Wait()
	if w == nil {
		return nil
	}
	var parts []string
	if w.MatchExpr() != "" {
		parts = append(parts, "match "+w.MatchExpr())
	}
	if w.Timeout() > 0 {
		outcome := "then the run fails"
		if w.OnTimeout() == spec.OnTimeoutContinue {
			outcome = "then TIMED_OUT and the run goes on"
		}
		parts = append(parts, "timeout "+spec.FormatDuration(w.Timeout())+", "+outcome)
	}
	return parts
}
