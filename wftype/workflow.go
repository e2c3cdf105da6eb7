package wftype

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// RunStatus is the state of a workflow run.
type RunStatus string

// Run statuses: RUNNING → COMPLETED | FAILED | CANCELLED; a FAILED or
// CANCELLED run may be retried (RUNNING again, from its failed steps).
const (
	RunRunning   RunStatus = "RUNNING"
	RunCompleted RunStatus = "COMPLETED"
	RunFailed    RunStatus = "FAILED"
	RunCancelled RunStatus = "CANCELLED"
)

// StepStatus is the state of one step of a workflow run.
type StepStatus string

// Step statuses: WAITING (for its upstream steps) → RUNNING (its tasks
// exist) → COMPLETED | FAILED; SKIPPED when its when condition is false or
// an upstream step was skipped; CANCELLED with its run.
const (
	StepWaiting   StepStatus = "WAITING"
	StepRunning   StepStatus = "RUNNING"
	StepCompleted StepStatus = "COMPLETED"
	StepFailed    StepStatus = "FAILED"
	StepSkipped   StepStatus = "SKIPPED"
	StepCancelled StepStatus = "CANCELLED"
	// StepTimedOut: a wait_for_event or approval step whose timeout passed
	// first, declared on_timeout: continue (the steps after it run and may
	// test it in their when).
	StepTimedOut StepStatus = "TIMED_OUT"
)

// Ended reports whether the step will change no more (unless its run is
// retried).
func (s StepStatus) Ended() bool {
	switch s {
	case StepCompleted, StepFailed, StepSkipped, StepCancelled, StepTimedOut:
		return true
	}
	return false
}

// WorkflowRun is one row of tasks.workflow_runs.
type WorkflowRun struct {
	ID         uuid.UUID
	Workflow   string
	SchemaName string
	Status     RunStatus
	Inputs     json.RawMessage
	Error      *string
	CreatedAt  time.Time
	Deadline   time.Time
	FinishedAt *time.Time
	// Attempt is 1, plus one for each retry of the run.
	Attempt int
	// ParentRunID is the run whose step started this one (a child run),
	// nil for a run started otherwise; ParentStep and ParentItem (-1 for a
	// step that is not for_each) name that step.
	ParentRunID *uuid.UUID
	ParentStep  string
	ParentItem  int
	// StartedBy says what started the run: nil for the API or the CLI.
	StartedBy *RunTrigger
	// Outputs are the run's outputs once it completed (its workflow's
	// outputs expressions), nil before.
	Outputs json.RawMessage
}

// Run trigger kinds: what started a run (WorkflowRun.StartedBy).
const (
	TriggerEvent    = "event"
	TriggerSchedule = "schedule"
)

// RunTrigger is what started a workflow run: an event through a
// subscription, or a tick of a schedule.
type RunTrigger struct {
	// Kind is TriggerEvent or TriggerSchedule.
	Kind         string     `json:"kind"`
	Subscription string     `json:"subscription,omitempty"`
	EventID      string     `json:"event_id,omitempty"`
	EventType    string     `json:"event_type,omitempty"`
	Schedule     string     `json:"schedule,omitempty"`
	Tick         *time.Time `json:"tick,omitempty"`
}

// WorkflowStep is one row of tasks.workflow_steps: a step of a run.
type WorkflowStep struct {
	RunID  uuid.UUID
	Step   string
	Status StepStatus
	// Items is the number of items of a for_each step, nil for a step that
	// runs once (or whose items are not known yet).
	Items *int
	// Started counts the step's tasks created, Done those completed.
	Started, Done int
	// Outputs are the step's outputs once it completed (a list, in item
	// order, for a for_each step).
	Outputs   json.RawMessage
	Error     *string
	UpdatedAt time.Time
	// WakeAt is when a RUNNING sleep step wakes, or when a waiting step's
	// timeout passes (nil: none).
	WakeAt *time.Time
	// WaitEvent is the event type a RUNNING wait_for_event step waits for.
	WaitEvent *string
	// WaitSignal is the signal a RUNNING approval step waits for.
	WaitSignal *string
}

// WorkflowRunView is a workflow run as the HTTP API shows it (schema
// WorkflowRun); GET /workflows/runs/{id} adds every step.
type WorkflowRunView struct {
	RunID      string          `json:"run_id"`
	Workflow   string          `json:"workflow"`
	SchemaName string          `json:"schema_name"`
	Status     RunStatus       `json:"status"`
	Inputs     json.RawMessage `json:"inputs"`
	Error      *string         `json:"error,omitempty"`
	Attempt    int             `json:"attempt"`
	CreatedAt  time.Time       `json:"created_at"`
	Deadline   time.Time       `json:"deadline"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	StatusURL  string          `json:"status_url"`
	// ParentRunID, ParentStep and ParentItem name the step of the run that
	// started this one (a child run).
	ParentRunID *string `json:"parent_run_id,omitempty"`
	ParentStep  string  `json:"parent_step,omitempty"`
	ParentItem  *int    `json:"parent_item,omitempty"`
	// StartedBy is the event or schedule tick that started the run.
	StartedBy *RunTrigger `json:"started_by,omitempty"`
	// Outputs are the run's outputs once it completed.
	Outputs json.RawMessage    `json:"outputs,omitempty"`
	Steps   []WorkflowStepView `json:"steps,omitempty"`
}

// WorkflowStepView is one step of a run as the HTTP API shows it.
type WorkflowStepView struct {
	Step      string          `json:"step"`
	TaskType  string          `json:"task_type"`
	DependsOn []string        `json:"depends_on"`
	Status    StepStatus      `json:"status"`
	Items     *int            `json:"items,omitempty"`
	Started   int             `json:"started"`
	Done      int             `json:"done"`
	Outputs   json.RawMessage `json:"outputs,omitempty"`
	Error     *string         `json:"error,omitempty"`
	// Kind is the step's kind: task, sleep, wait_for_event, approval or workflow (a child run).
	Kind string `json:"kind,omitempty"`
	// Waiting says what a RUNNING sleep, wait_for_event or approval step
	// waits for, and until when.
	Waiting *WorkflowWaitView `json:"waiting,omitempty"`
	// Tasks are the step's tasks (its items' for a for_each step), oldest
	// first; a retried run keeps the failed ones.
	Tasks []WorkflowTaskView `json:"tasks"`
	// Workflow is the workflow a child workflow step starts ("" for a task
	// step), Runs its child runs, oldest first.
	Workflow string              `json:"workflow,omitempty"`
	Runs     []WorkflowChildView `json:"runs,omitempty"`
}

// WorkflowChildView is one child run of a child workflow step.
type WorkflowChildView struct {
	RunID  string    `json:"run_id"`
	Item   *int      `json:"item,omitempty"`
	Status RunStatus `json:"status"`
	Error  *string   `json:"error,omitempty"`
}

// WorkflowWaitView is what a waiting step waits for.
type WorkflowWaitView struct {
	// Until is when a sleep ends, or when the wait times out (absent: no
	// timeout).
	Until *time.Time `json:"until,omitempty"`
	// Event is the event type a wait_for_event step waits for.
	Event string `json:"event,omitempty"`
	// Signal is the signal an approval step waits for.
	Signal string `json:"signal,omitempty"`
	// SignalURL is where the signal is sent (POST, a JSON payload).
	SignalURL string `json:"signal_url,omitempty"`
}

// WorkflowTaskView is one task of a step.
type WorkflowTaskView struct {
	TaskID   string     `json:"task_id"`
	Item     *int       `json:"item,omitempty"`
	Status   TaskStatus `json:"status"`
	Attempts int        `json:"attempts"`
	Error    *string    `json:"error,omitempty"`
}

// WorkflowRunPage is a page of runs (GET /workflows/runs).
type WorkflowRunPage struct {
	Runs       []WorkflowRunView `json:"runs"`
	NextCursor string            `json:"next_cursor,omitempty"`
}
