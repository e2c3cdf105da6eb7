package wfclient

import (
	"encoding/json"
	"time"
)

// TaskStatus is a task's state (schema Task, status).
type TaskStatus string

// Task statuses.
const (
	StatusPending    TaskStatus = "PENDING"
	StatusActive     TaskStatus = "ACTIVE"
	StatusCompleted  TaskStatus = "COMPLETED"
	StatusFailed     TaskStatus = "FAILED"
	StatusDeadLetter TaskStatus = "DEAD_LETTER"
	StatusCancelled  TaskStatus = "CANCELLED"
)

// Terminal reports whether no runner will pick the task up again.
func (s TaskStatus) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusDeadLetter || s == StatusCancelled
}

// Task is one task (schema Task).
type Task struct {
	TaskID         string          `json:"task_id"`
	TaskType       string          `json:"task_type"`
	SchemaName     string          `json:"schema_name"`
	Scope          string          `json:"scope"`
	ExecutionMode  string          `json:"execution_mode"`
	Status         TaskStatus      `json:"status"`
	DedupKey       *string         `json:"dedup_key,omitempty"`
	Inputs         json.RawMessage `json:"inputs"`
	Outputs        json.RawMessage `json:"outputs,omitempty"`
	Progress       json.RawMessage `json:"progress,omitempty"`
	Error          *string         `json:"error,omitempty"`
	Priority       int             `json:"priority"`
	Attempts       int             `json:"attempts"`
	RetryCount     int             `json:"retry_count"`
	MaxRetries     int             `json:"max_retries"`
	Snoozes        int             `json:"snoozes"`
	OwnerID        *string         `json:"owner_id,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	RunAfter       time.Time       `json:"run_after"`
	StartedAt      *time.Time      `json:"started_at,omitempty"`
	FinishedAt     *time.Time      `json:"finished_at,omitempty"`
	StatusURL      string          `json:"status_url"`
	AttemptHistory []Attempt       `json:"attempt_history,omitempty"`
}

// Attempt is one ended run of a task (schema Attempt).
type Attempt struct {
	Attempt    int        `json:"attempt"`
	OwnerID    *string    `json:"owner_id,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt time.Time  `json:"finished_at"`
	Outcome    string     `json:"outcome"`
	Error      *string    `json:"error,omitempty"`
}

// Submission answers a task creation or an ingestion (schema Submission).
type Submission struct {
	TaskID       string          `json:"task_id"`
	Status       TaskStatus      `json:"status"`
	StatusURL    string          `json:"status_url"`
	Deduplicated bool            `json:"deduplicated"`
	Outputs      json.RawMessage `json:"outputs,omitempty"`
	Error        *string         `json:"error,omitempty"`
}

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
type TaskPage struct {
	Items      []Task `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

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
type Event struct {
	EventID      string          `json:"event_id"`
	EventType    string          `json:"event_type"`
	Scope        string          `json:"scope"`
	SchemaName   string          `json:"schema_name"`
	Payload      json.RawMessage `json:"payload"`
	Status       string          `json:"status"`
	Deduplicated bool            `json:"deduplicated"`
	CreatedAt    time.Time       `json:"created_at"`
}

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
type BulkTasksRequest struct {
	Status      []TaskStatus `json:"status,omitempty"`
	TaskType    []string     `json:"task_type,omitempty"`
	SchemaName  []string     `json:"schema_name,omitempty"`
	CreatedFrom *time.Time   `json:"created_from,omitempty"`
	CreatedTo   *time.Time   `json:"created_to,omitempty"`
	Limit       int          `json:"limit,omitempty"`
	DryRun      bool         `json:"dry_run,omitempty"`
	All         bool         `json:"all,omitempty"`
}

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
