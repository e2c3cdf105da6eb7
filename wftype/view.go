package wftype

import (
	"encoding/json"
	"time"
)

// This file holds the JSON shapes of wf's HTTP API (schemas/openapi.json)
// that both sides use: the server (package api) writes them and the Go
// client (package wfclient) reads them, so the two cannot drift apart.

// TaskView is a task as the HTTP API shows it (schema Task): the row's
// fields under the API's names, its status URL and, from GET /tasks/{id}
// only, its attempt history.
type TaskView struct {
	TaskID        string          `json:"task_id"`
	TaskType      string          `json:"task_type"`
	SchemaName    string          `json:"schema_name"`
	Scope         Scope           `json:"scope"`
	ExecutionMode ExecutionMode   `json:"execution_mode"`
	Status        TaskStatus      `json:"status"`
	DedupKey      *string         `json:"dedup_key,omitempty"`
	Inputs        json.RawMessage `json:"inputs"`
	Outputs       json.RawMessage `json:"outputs,omitempty"`
	Progress      json.RawMessage `json:"progress,omitempty"`
	Error         *string         `json:"error,omitempty"`
	Priority      int             `json:"priority"`
	Attempts      int             `json:"attempts"`
	RetryCount    int             `json:"retry_count"`
	MaxRetries    int             `json:"max_retries"`
	Snoozes       int             `json:"snoozes"`
	// OwnerID is the instance holding the task's lease, shown to workers
	// and admins only.
	OwnerID         *string    `json:"owner_id,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	RunAfter        time.Time  `json:"run_after"`
	StartedAt       *time.Time `json:"started_at,omitempty"`
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
	LockedUntil     *time.Time `json:"locked_until,omitempty"`
	LastHeartbeatAt *time.Time `json:"last_heartbeat_at,omitempty"`
	StatusURL       string     `json:"status_url"`
	// AttemptHistory is shown by GET /tasks/{id} only. There an attempt
	// that was retried shows the outcome AttemptRetried (the row keeps
	// PENDING), and OwnerID only to workers and admins.
	AttemptHistory []Attempt `json:"attempt_history,omitempty"`
	// WaitingReason says why a PENDING task is not running: not_due (its
	// run_after is ahead), paused (its type or tenant), concurrency_global,
	// concurrency_per_tenant or rate_limit (a limit of its type),
	// not_served (no live instance serves its type); absent when it only
	// waits for a free slot, and for a task not PENDING.
	WaitingReason string `json:"waiting_reason,omitempty"`
	// Events are shown by GET /tasks/{id} only: the events the task
	// emitted (its handler's, and its task.failed or task.dead_lettered),
	// the last 50, oldest first, with their status now.
	Events []TaskEventView `json:"events,omitempty"`
}

// TaskEventView is one event a task emitted (schema TaskEvent).
type TaskEventView struct {
	EventID   string    `json:"event_id"`
	EventType string    `json:"event_type"`
	CreatedAt time.Time `json:"created_at"`
	// Status is PENDING, PROCESSING or DEAD_LETTER while the event is in
	// the outbox; CONSUMED once its subscriptions consumed it (consumed
	// events are deleted) or its dead letter was purged.
	Status string  `json:"status"`
	Error  *string `json:"error,omitempty"`
}

// ReportRecordView is one record the database reporter kept for a task
// (schema ReportRecord), as GET /tasks/{id}/records shows it.
type ReportRecordView struct {
	// N is the record's number in its run, from 1.
	N int64 `json:"n"`
	// Status is the record's outcome: SUCCESS, REJECTED or FAILED.
	Status string `json:"status"`
	// Envelope is the per-record envelope (schemas/envelope.schema.json).
	Envelope json.RawMessage `json:"envelope"`
	// Truncated says the envelope was kept shortened (without its
	// geometry, or also its properties and stats) to fit the bound.
	Truncated bool `json:"truncated,omitempty"`
}

// AttemptRetried is the outcome the HTTP API shows for an attempt that
// put its task back to PENDING for a retry.
const AttemptRetried TaskStatus = "RETRIED"

// SubmissionView answers a task creation or an ingestion (schema
// Submission); a SYNCHRONOUS task's outcome comes with it.
type SubmissionView struct {
	TaskID       string     `json:"task_id"`
	Status       TaskStatus `json:"status"`
	StatusURL    string     `json:"status_url"`
	Deduplicated bool       `json:"deduplicated"`
	// ReplacedTaskID is the task this one cancelled to take its dedup key
	// (its type's on_duplicate), absent when none.
	ReplacedTaskID string          `json:"replaced_task_id,omitempty"`
	Outputs        json.RawMessage `json:"outputs,omitempty"`
	Error          *string         `json:"error,omitempty"`
}

// EventView is an event as the HTTP API shows it (schema Event).
type EventView struct {
	EventID        string          `json:"event_id"`
	EventType      string          `json:"event_type"`
	Scope          string          `json:"scope"`
	SchemaName     string          `json:"schema_name"`
	Payload        json.RawMessage `json:"payload"`
	Status         string          `json:"status"`
	DedupKey       *string         `json:"dedup_key,omitempty"`
	Attempts       int             `json:"attempts"`
	CreatedAt      time.Time       `json:"created_at"`
	RunAfter       time.Time       `json:"run_after"`
	Error          *string         `json:"error,omitempty"`
	DeadLetteredAt *time.Time      `json:"dead_lettered_at,omitempty"`
}

// EmittedEventView answers POST /events (schema EmittedEvent): the event,
// and whether it deduplicated to a pending one instead of being written.
type EmittedEventView struct {
	EventView
	Deduplicated bool `json:"deduplicated"`
}

// Page is one page of a list (schemas *List), newest or lowest id first as
// the list says; NextCursor, when set, continues it.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// BulkTasksRequest selects tasks for a bulk cancel or requeue (schema
// BulkTasksRequest): which tasks, how many per call, and whether to only
// count them.
type BulkTasksRequest struct {
	Status      []TaskStatus `json:"status,omitempty"`
	TaskType    []string     `json:"task_type,omitempty"`
	SchemaName  []string     `json:"schema_name,omitempty"`
	CreatedFrom *time.Time   `json:"created_from,omitempty"`
	CreatedTo   *time.Time   `json:"created_to,omitempty"`
	Limit       int          `json:"limit,omitempty"`
	DryRun      bool         `json:"dry_run,omitempty"`
	// All must be true to match without a task type, tenant or creation
	// time: a forgotten filter must not cancel the whole queue.
	All bool `json:"all,omitempty"`
}
