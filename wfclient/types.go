package wfclient

import (
	"time"

	"github.com/wfhq/wf/wftype"
)

// TaskStatus is a task's state (schema Task, status).
type TaskStatus = wftype.TaskStatus

// Task statuses.
const (
	StatusPending    = wftype.StatusPending
	StatusActive     = wftype.StatusActive
	StatusCompleted  = wftype.StatusCompleted
	StatusFailed     = wftype.StatusFailed
	StatusDeadLetter = wftype.StatusDeadLetter
	StatusCancelled  = wftype.StatusCancelled
)

// Task is one task (schema Task).
type Task = wftype.TaskView

// Attempt is one ended run of a task (schema Attempt).
type Attempt = wftype.Attempt

// Submission answers a task creation or an ingestion (schema Submission).
type Submission = wftype.SubmissionView

// EnqueueRequest creates a task (schema CreateTaskRequest). RunAt or RunIn
// (a duration such as "5m") delay an ASYNCHRONOUS one.
type EnqueueRequest struct {
	TaskType   string         `json:"task_type"`
	SchemaName string         `json:"schema_name,omitempty"`
	Inputs     map[string]any `json:"inputs,omitempty"`
	DedupKey   string         `json:"dedup_key,omitempty"`
	Priority   *int           `json:"priority,omitempty"`
	RunAt      *time.Time     `json:"run_at,omitempty"`
	RunIn      string         `json:"run_in,omitempty"`
}

// ListParams filters a task list (GET /tasks); zero fields do not filter.
type ListParams struct {
	Status      []TaskStatus
	TaskType    []string
	SchemaName  []string
	CreatedFrom *time.Time
	CreatedTo   *time.Time
	Limit       int
	Cursor      string
}

// TaskPage is one page of tasks, newest first; NextCursor continues.
type TaskPage = wftype.Page[Task]

// IngestionRequest submits a source to a collection (schema
// IngestionRequest).
type IngestionRequest struct {
	Source        string         `json:"source"`
	Format        string         `json:"format"`
	IDAttribute   string         `json:"id_attribute"`
	AssetID       string         `json:"asset_id"`
	Layer         string         `json:"layer,omitempty"`
	SourceCRS     string         `json:"source_crs,omitempty"`
	ValidityStart *time.Time     `json:"validity_start,omitempty"`
	CSV           map[string]any `json:"csv,omitempty"`
}

// EmitEventRequest emits an event (schema EmitEventRequest).
type EmitEventRequest struct {
	EventType  string         `json:"event_type"`
	Scope      string         `json:"scope,omitempty"`
	SchemaName string         `json:"schema_name,omitempty"`
	Payload    map[string]any `json:"payload,omitempty"`
	DedupKey   string         `json:"dedup_key,omitempty"`
}

// Event is an emitted event (schema EmittedEvent).
type Event = wftype.EmittedEventView

// PauseKind says what a pause stops (schema PauseKind).
type PauseKind string

// Pause kinds.
const (
	PauseTaskType PauseKind = "task_type"
	PauseTenant   PauseKind = "tenant"
)

// Pause is a paused task type or tenant (schema Pause).
type Pause struct {
	Kind     PauseKind `json:"kind"`
	Name     string    `json:"name"`
	Reason   string    `json:"reason,omitempty"`
	PausedBy string    `json:"paused_by,omitempty"`
	PausedAt time.Time `json:"paused_at"`
}

// BulkTasksRequest selects tasks for a bulk cancel or requeue (schema
// BulkTasksRequest).
type BulkTasksRequest = wftype.BulkTasksRequest

// BulkResult is what a bulk cancel or requeue did (schemas BulkCancel and
// BulkRequeue): Matched for a dry run, else Cancelled or Requeued and
// Skipped; More says call again.
type BulkResult struct {
	DryRun    bool   `json:"dry_run"`
	Matched   *int64 `json:"matched,omitempty"`
	Cancelled int    `json:"cancelled"`
	Requeued  int    `json:"requeued"`
	Skipped   int    `json:"skipped"`
	More      bool   `json:"more"`
}
