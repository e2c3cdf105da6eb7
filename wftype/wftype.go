// Package wftype holds the base types every other wf package shares: task and
// event rows, their statuses, execution modes, scopes and sentinel errors,
// and the views of the HTTP API that both the server and the Go client use
// (view.go). It has no dependencies inside wf, so importing it never creates
// a cycle.
package wftype

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
	// Traceparent is the W3C trace context the task was enqueued in ("" when
	// tracing was off): the engine's spans for its claim, run and finish
	// continue that trace.
	Traceparent string `json:"traceparent,omitempty"`
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
	// retry, AttemptSnoozed for a snooze, else COMPLETED, FAILED,
	// DEAD_LETTER or CANCELLED.
	Outcome TaskStatus `json:"outcome"`
	// Error is the attempt's error, if it failed.
	Error *string `json:"error,omitempty"`
}

// AttemptSnoozed is the outcome of an attempt whose handler snoozed the
// task: back to PENDING, no retry counted.
const AttemptSnoozed TaskStatus = "SNOOZED"

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

// MaxSnoozeDelay bounds how long one snooze puts a task off.
const MaxSnoozeDelay = 7 * 24 * time.Hour

// SnoozeError is a handler's answer "come back later": the task goes back
// to PENDING, due after Delay, without counting a retry (the service it
// needs is busy, a rate limit says wait, the data is not there yet). The
// task type's max_snoozes bounds how often a task may be snoozed; past it a
// snooze counts as a failed attempt.
type SnoozeError struct {
	Delay time.Duration
	// Reason, optional, is kept as the task's error while it waits.
	Reason string
}

// Error implements error.
func (e *SnoozeError) Error() string {
	msg := "snoozed for " + e.Delay.String()
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Snooze returns the error with which a handler puts its task off for
// delay (clamped to 0..MaxSnoozeDelay) without counting a retry.
func Snooze(delay time.Duration, reason string) error {
	return &SnoozeError{Delay: min(max(delay, 0), MaxSnoozeDelay), Reason: reason}
}

// SnoozeOf returns the snooze err holds (anywhere in its chain), if any.
func SnoozeOf(err error) (*SnoozeError, bool) {
	var s *SnoozeError
	if errors.As(err, &s) {
		return s, true
	}
	return nil, false
}

// DefaultSnooze is the delay of a snooze that names none.
const DefaultSnooze = time.Minute

// ParseSnoozeDelay reads a snooze's delay as handlers in other languages
// give it (an exec child's stdout, an HTTP Wf-Snooze header): a Go duration
// (90s, 5m) or a number of seconds; "" is DefaultSnooze. For anything else,
// or a negative delay, it returns DefaultSnooze and an error saying so.
func ParseSnoozeDelay(text string) (time.Duration, error) {
	if text == "" {
		return DefaultSnooze, nil
	}
	if secs, err := strconv.ParseFloat(text, 64); err == nil && secs >= 0 && secs <= MaxSnoozeDelay.Seconds() {
		return time.Duration(secs * float64(time.Second)), nil
	} else if err == nil && secs > MaxSnoozeDelay.Seconds() {
		return MaxSnoozeDelay, nil
	}
	if d, err := time.ParseDuration(text); err == nil && d >= 0 {
		return min(d, MaxSnoozeDelay), nil
	}
	if len(text) > 40 {
		text = text[:40] + "…"
	}
	return DefaultSnooze, fmt.Errorf("the snooze delay %q is neither a duration (90s, 5m) nor seconds; waiting %s", text, DefaultSnooze)
}
