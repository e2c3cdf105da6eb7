// Package wftype holds the base types every other wf package shares: task and
// event rows, their statuses, execution modes, scopes and sentinel errors. It
// has no dependencies inside wf, so importing it never creates a cycle.
package wftype

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
)

// TaskStatus is the lifecycle state of a task row.
type TaskStatus string

// Task statuses: PENDING → ACTIVE → COMPLETED | FAILED | DEAD_LETTER, plus CANCELLED.
const (
	StatusPending    TaskStatus = "PENDING"
	StatusActive     TaskStatus = "ACTIVE"
	StatusCompleted  TaskStatus = "COMPLETED"
	StatusFailed     TaskStatus = "FAILED"
	StatusDeadLetter TaskStatus = "DEAD_LETTER"
	StatusCancelled  TaskStatus = "CANCELLED"
)

// Terminal reports whether no runner will ever pick the task up again.
func (s TaskStatus) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusDeadLetter, StatusCancelled:
		return true
	}
	return false
}

// ExecutionMode says whether a task runs in the background or in front of its caller.
type ExecutionMode string

// Execution modes, as in the seed.
const (
	ModeAsync ExecutionMode = "ASYNCHRONOUS"
	ModeSync  ExecutionMode = "SYNCHRONOUS"
)

// Scope says what a task belongs to.
type Scope string

// Task scopes.
const (
	ScopeCatalog Scope = "CATALOG"
	ScopeSystem  Scope = "SYSTEM"
	ScopeAsset   Scope = "ASSET"
)

// SystemSchema is the schema_name of tasks that belong to no tenant.
const SystemSchema = "system"

// Task is one row of tasks.tasks as the engine and its runners see it.
type Task struct {
	ID              uuid.UUID       `json:"task_id"`
	Timestamp       time.Time       `json:"timestamp"`
	SchemaName      string          `json:"schema_name"`
	Scope           Scope           `json:"scope"`
	ExecutionMode   ExecutionMode   `json:"execution_mode"`
	TaskType        string          `json:"task_type"`
	Status          TaskStatus      `json:"status"`
	DedupKey        *string         `json:"dedup_key,omitempty"`
	Inputs          json.RawMessage `json:"inputs"`
	Outputs         json.RawMessage `json:"outputs,omitempty"`
	Progress        json.RawMessage `json:"progress,omitempty"`
	Error           *string         `json:"error,omitempty"`
	Priority        int             `json:"priority"`
	RetryCount      int             `json:"retry_count"`
	MaxRetries      int             `json:"max_retries"`
	Attempts        int             `json:"attempts"`
	OwnerID         *string         `json:"owner_id,omitempty"`
	RunAfter        time.Time       `json:"run_after"`
	LockedUntil     *time.Time      `json:"locked_until,omitempty"`
	StartedAt       *time.Time      `json:"started_at,omitempty"`
	FinishedAt      *time.Time      `json:"finished_at,omitempty"`
	LastHeartbeatAt *time.Time      `json:"last_heartbeat_at,omitempty"`
	// Snoozes counts the runs whose handler answered "come back later"
	// (see SnoozeError): they put the task back without counting a retry.
	Snoozes int `json:"snoozes"`
}

// Attempt is one ended run of a task, as its attempt history keeps it (the
// last 20 per task).
type Attempt struct {
	// Attempt is the task's attempt number (1 for its first run).
	Attempt int `json:"attempt"`
	// OwnerID is the instance (or remote worker) that ran it.
	OwnerID *string `json:"owner_id,omitempty"`
	// StartedAt is when it was claimed; FinishedAt when its outcome was written.
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt time.Time  `json:"finished_at"`
	// Outcome is the status the attempt left the task in: PENDING for a
	// retry, else COMPLETED, FAILED, DEAD_LETTER or CANCELLED.
	Outcome TaskStatus `json:"outcome"`
	// Error is the attempt's error, if it failed.
	Error *string `json:"error,omitempty"`
}

// Sentinel errors shared across packages.
var (
	// ErrNotFound is returned when a task, event or catalog does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict is returned when a state change does not apply to the row's current state.
	ErrConflict = errors.New("conflict with the current state")
	// ErrFinishedRemotely is returned by a runner whose task ran in another
	// process (a Cloud Run job running `wf exec`) that wrote the task's
	// result to the database itself: the dispatcher must write nothing, or
	// it would overwrite that result.
	ErrFinishedRemotely = errors.New("the task's result was written by its remote worker")
)

// PermanentError marks a handler failure that retrying cannot fix (bad input,
// a 4xx from an endpoint). The engine moves such a task to FAILED at once.
type PermanentError struct{ Err error }

// Error implements error.
func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the engine fails the task without retrying it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err (or anything it wraps) is a PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}
