package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// This file runs the steps that wait (sleep, wait_for_event, approval): a
// waiting step is a RUNNING row with no task, whose wake_at, wait_event or
// wait_signal say what ends it. Nothing polls it: the wait pass (Wake)
// reads the steps whose time came and the events delivered to waiting
// steps, and a signal (Signal) ends its step in the transaction that
// receives it. Each ends the step with its run's row locked, as a task's
// completion does, and creates what it unblocks in the same transaction.

// waiting reports whether a RUNNING step row waits (it has no task).
func waiting(s *wftype.WorkflowStep) bool {
	return s.WakeAt != nil || s.WaitEvent != nil || s.WaitSignal != nil
}

// startWait starts a wait step, whose row startStep made RUNNING: a sleep
// whose time has come already completes at once.
func (rs *runState) startWait(step *spec.Step, st *wftype.WorkflowStep) {
	w := step.Wait()
	st.Items, st.WakeAt, st.WaitEvent, st.WaitSignal = nil, nil, nil, nil
	switch w.Kind() {
	case spec.StepKindSleep:
		at, err := step.WakeAt(*rs.environment(), rs.now)
		if err != nil {
			rs.fail(step.Name(), err.Error())
			return
		}
		if !at.After(rs.now) {
			rs.finishWait(st, sleepOutputs(at))
			return
		}
		at = at.UTC()
		st.WakeAt = &at
		return
	case spec.StepKindEvent:
		t := w.EventType()
		st.WaitEvent = &t
	case spec.StepKindApproval:
		n := w.Signal()
		st.WaitSignal = &n
	}
	if w.Timeout() > 0 {
		at := rs.now.Add(w.Timeout()).UTC()
		st.WakeAt = &at
	}
}

// sleepOutputs are the outputs of a sleep that woke: {until}.
func sleepOutputs(at time.Time) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"until": at.UTC().Format(time.RFC3339Nano)}) // a string always encodes
	return b
}

// finishWait completes a waiting step with outputs.
func (rs *runState) finishWait(st *wftype.WorkflowStep, outputs json.RawMessage) {
	st.Status, st.Outputs, st.Error = wftype.StepCompleted, orNull(outputs), nil
	st.WakeAt, st.WaitEvent, st.WaitSignal = nil, nil, nil
	rs.dirty[st.Step] = true
	rs.ended(st)
}

// wake ends a waiting step whose wake_at passed: a sleep completes, a wait
// times out (TIMED_OUT with on_timeout: continue, else it fails its run).
func (rs *runState) wake(step *spec.Step, st *wftype.WorkflowStep) {
	w := step.Wait()
	if w.Kind() == spec.StepKindSleep {
		rs.finishWait(st, sleepOutputs(*st.WakeAt))
		return
	}
	what := "signal " + w.Signal()
	if w.Kind() == spec.StepKindEvent {
		what = "an event " + w.EventType()
	}
	msg := fmt.Sprintf("step %s timed out: no %s came within %s (by %s)", st.Step, what,
		spec.FormatDuration(w.Timeout()), st.WakeAt.UTC().Format(time.RFC3339))
	if w.OnTimeout() != spec.OnTimeoutContinue {
		rs.fail(st.Step, msg)
		return
	}
	st.Status, st.Outputs, st.Error = wftype.StepTimedOut, nil, &msg
	st.WakeAt, st.WaitEvent, st.WaitSignal = nil, nil, nil
	rs.dirty[st.Step] = true
	rs.ended(st)
}

// WakeResult says what a wait pass did.
type WakeResult struct {
	// Woken counts the steps it ended (woke, timed out, or matched by an
	// event).
	Woken int
	// More: it did a full batch, so more may be due at once.
	More bool
	// Next is the earliest wake time still to come, nil for none.
	Next *time.Time
}

// Wake is the wait pass of the runs of the workflows the specs declare: in
// one transaction it ends the steps whose wake time passed (up to limit
// runs: sleeps that end, waits that time out) and applies the events
// delivered to waiting steps (their match evaluated: a match completes the
// step with the event's payload as outputs), creating what they unblock;
// then it says when the next step wakes. Instances passing at once lock
// the same runs in turn and find nothing left to do.
func (w *Workflows) Wake(ctx context.Context, st *store.Store, limit int) (WakeResult, error) {
	names := w.Names()
	if len(names) == 0 {
		return WakeResult{}, nil
	}
	now := w.cfg.Clock.Now()
	due, err := st.WorkflowWaitsDue(ctx, names, now, limit)
	if err != nil {
		return WakeResult{}, err
	}
	res := WakeResult{Next: due.Next, More: due.Full}
	if err := st.DeleteOrphanDeliveries(ctx, due.Orphans); err != nil {
		return res, err
	}
	ids := slices.Clone(due.Woken)
	for _, id := range due.Delivered {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return res, nil
	}
	err = st.InTx(ctx, func(tx *store.Store) error {
		n, err := w.wakeRuns(ctx, tx, ids, due.Delivered, now)
		res.Woken = n
		return err
	})
	if err != nil {
		return res, fmt.Errorf("error waking waiting workflow steps: %w", err)
	}
	return res, nil
}

// wakeRuns locks runs ids and ends their steps that are due at now, then
// applies the events delivered to the runs delivered; it returns how many
// steps it ended.
func (w *Workflows) wakeRuns(ctx context.Context, tx *store.Store, ids, delivered []uuid.UUID, now time.Time) (int, error) {
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	runs, steps, err := tx.LockWorkflowRuns(ctx, ids)
	if err != nil {
		return 0, err
	}
	deliveries, err := tx.WorkflowDeliveries(ctx, delivered)
	if err != nil {
		return 0, err
	}
	stepsOf := map[uuid.UUID][]wftype.WorkflowStep{}
	for _, s := range steps {
		stepsOf[s.RunID] = append(stepsOf[s.RunID], s)
	}
	byRun := map[uuid.UUID][]store.Delivery{}
	for _, d := range deliveries {
		byRun[d.RunID] = append(byRun[d.RunID], d)
	}
	n := 0
	var states []*runState
	for _, r := range runs {
		wf, ok := w.cfg.Specs.Workflow(r.Workflow)
		if !ok || r.Status != wftype.RunRunning {
			continue // its deliveries are deleted below
		}
		rs := newRunState(r, wf, stepsOf[r.ID], now)
		for _, step := range wf.Steps() {
			s := rs.steps[step.Name()]
			if step.Wait() != nil && s != nil && s.Status == wftype.StepRunning && s.WakeAt != nil && !s.WakeAt.After(now) {
				rs.wake(step, s)
				n++
			}
		}
		for _, d := range byRun[r.ID] {
			if rs.deliver(d, w) {
				n++
			}
		}
		rs.schedule()
		states = append(states, rs)
	}
	if err := tx.DeleteWorkflowDeliveries(ctx, deliveries); err != nil {
		return 0, err
	}
	return n, w.write(ctx, tx, states)
}

// deliver applies an event delivered to a step: when the step still waits
// for it and its match accepts the event, the step completes with the
// event's payload. An error evaluating the match (a value the event lacks)
// is no match, logged.
func (rs *runState) deliver(d store.Delivery, w *Workflows) bool {
	st := rs.steps[d.Step]
	step, ok := rs.wf.Step(d.Step)
	if st == nil || !ok || step.Wait() == nil || st.Status != wftype.StepRunning || st.WaitEvent == nil || *st.WaitEvent != d.EventType {
		return false
	}
	var payload any
	if err := json.Unmarshal(d.Payload, &payload); err != nil {
		return false
	}
	ok, err := step.Matches(*rs.environment(), spec.EventValue{
		ID: d.EventID.String(), Type: d.EventType, SchemaName: d.SchemaName, Payload: payload, CreatedAt: d.CreatedAt,
	})
	if err != nil {
		w.cfg.Logger.Warn("an event did not match a waiting workflow step: its match failed", "run_id", rs.run.ID, "step", d.Step,
			"event_id", d.EventID, "err", err)
		return false
	}
	if !ok {
		return false
	}
	rs.finishWait(st, d.Payload)
	return true
}

// SignalError is a signal a run cannot take: its payload breaks the
// step's payload schema.
type SignalError struct {
	Signal string
	Inputs spec.InputErrors
	// Message is set for a problem that is not about one property.
	Message string
}

// Error implements error.
func (e *SignalError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("invalid payload for signal %s: %s", e.Signal, e.Message)
	}
	return fmt.Sprintf("invalid payload for signal %s: %s", e.Signal, strings.TrimPrefix(e.Inputs.Error(), "invalid inputs: "))
}

// Signal sends signal name with payload (a JSON value; default {}) to run
// id: every approval step of the run waiting for it completes with the
// payload as its outputs, and what that unblocks is created, in one
// transaction. A payload that breaks a step's payload schema gives a
// *SignalError and changes nothing; a run that is not RUNNING, or has no
// step waiting for the signal now, gives wftype.ErrConflict; a workflow
// with no approval step of that signal, wftype.ErrNotFound.
func (w *Workflows) Signal(ctx context.Context, st *store.Store, id uuid.UUID, name string, payload json.RawMessage) (wftype.WorkflowRun, error) {
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	var value any
	if err := json.Unmarshal(payload, &value); err != nil {
		return wftype.WorkflowRun{}, &SignalError{Signal: name, Message: "the payload is not valid JSON: " + err.Error()}
	}
	return w.change(ctx, st, id, "signalling", func(_ *store.Store, r wftype.WorkflowRun, steps []wftype.WorkflowStep) (*runState, error) {
		wf, ok := w.cfg.Specs.Workflow(r.Workflow)
		if !ok {
			return nil, fmt.Errorf("%w %q: the specs do not declare it", ErrUnknownWorkflow, r.Workflow)
		}
		var targets []*spec.Step
		for _, step := range wf.Steps() {
			if wt := step.Wait(); wt != nil && wt.Kind() == spec.StepKindApproval && wt.Signal() == name {
				targets = append(targets, step)
			}
		}
		if len(targets) == 0 {
			return nil, fmt.Errorf("workflow %s has no approval step for signal %q: %w", wf.Name(), name, wftype.ErrNotFound)
		}
		if r.Status != wftype.RunRunning {
			return nil, fmt.Errorf("workflow run %s is %s, not RUNNING: %w", id, r.Status, wftype.ErrConflict)
		}
		rs := newRunState(r, wf, steps, w.cfg.Clock.Now())
		var sent []*wftype.WorkflowStep
		for _, step := range targets {
			s := rs.steps[step.Name()]
			if s == nil || s.Status != wftype.StepRunning || s.WaitSignal == nil || *s.WaitSignal != name {
				continue
			}
			if err := step.Wait().ValidatePayload(value); err != nil {
				var ie spec.InputErrors
				if errors.As(err, &ie) {
					return nil, &SignalError{Signal: name, Inputs: ie}
				}
				return nil, &SignalError{Signal: name, Message: err.Error()}
			}
			sent = append(sent, s)
		}
		if len(sent) == 0 {
			return nil, fmt.Errorf("no step of workflow run %s waits for signal %q now: %w", id, name, wftype.ErrConflict)
		}
		for _, s := range sent {
			rs.finishWait(s, payload)
		}
		rs.schedule()
		return rs, nil
	})
}

// WaitingFor says what a RUNNING step with no task waits for, for a
// person ("sleeps until …", "waits for event E until …", "waits for signal
// S"); "" for any other step.
func WaitingFor(s wftype.WorkflowStep) string {
	if s.Status != wftype.StepRunning || !waiting(&s) {
		return ""
	}
	until := ""
	if s.WakeAt != nil {
		until = " until " + s.WakeAt.UTC().Format(time.RFC3339)
	}
	switch {
	case s.WaitEvent != nil:
		return "waits for event " + *s.WaitEvent + until
	case s.WaitSignal != nil:
		return "waits for signal " + *s.WaitSignal + until
	}
	return "sleeps" + until
}
