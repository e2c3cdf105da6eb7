package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// taskView is a task as the API shows it (schema Task).
type taskView struct {
	TaskID          string          `json:"task_id"`
	TaskType        string          `json:"task_type"`
	SchemaName      string          `json:"schema_name"`
	Scope           string          `json:"scope"`
	ExecutionMode   string          `json:"execution_mode"`
	Status          string          `json:"status"`
	DedupKey        *string         `json:"dedup_key,omitempty"`
	Inputs          json.RawMessage `json:"inputs"`
	Outputs         json.RawMessage `json:"outputs,omitempty"`
	Progress        json.RawMessage `json:"progress,omitempty"`
	Error           *string         `json:"error,omitempty"`
	Priority        int             `json:"priority"`
	Attempts        int             `json:"attempts"`
	RetryCount      int             `json:"retry_count"`
	MaxRetries      int             `json:"max_retries"`
	Snoozes         int             `json:"snoozes"`
	OwnerID         *string         `json:"owner_id,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	RunAfter        time.Time       `json:"run_after"`
	StartedAt       *time.Time      `json:"started_at,omitempty"`
	FinishedAt      *time.Time      `json:"finished_at,omitempty"`
	LockedUntil     *time.Time      `json:"locked_until,omitempty"`
	LastHeartbeatAt *time.Time      `json:"last_heartbeat_at,omitempty"`
	StatusURL       string          `json:"status_url"`
	// AttemptHistory is shown by GET /tasks/{id} only.
	AttemptHistory []attemptView `json:"attempt_history,omitempty"`
}

// attemptView is one ended attempt of a task (schema Attempt).
type attemptView struct {
	Attempt    int        `json:"attempt"`
	OwnerID    *string    `json:"owner_id,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt time.Time  `json:"finished_at"`
	Outcome    string     `json:"outcome"`
	Error      *string    `json:"error,omitempty"`
}

// newAttemptViews converts an attempt history; the instance names are shown
// to workers and admins only, as a task's owner_id is.
func newAttemptViews(as []wftype.Attempt, p *principal) []attemptView {
	out := make([]attemptView, 0, len(as))
	for _, a := range redact.Attempts(as) {
		v := attemptView{Attempt: a.Attempt, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt.UTC(), Outcome: string(a.Outcome), Error: a.Error}
		if a.Outcome == wftype.StatusPending {
			v.Outcome = "RETRIED"
		}
		if p != nil && (p.role == config.RoleWorker || p.role == config.RoleAdmin) {
			v.OwnerID = a.OwnerID
		}
		out = append(out, v)
	}
	return out
}

// newTaskView converts a task row, credentials in its URLs redacted
// (internal/redact). The lease (owner_id) is shown to workers
// and admins only: a client has no use for instance names.
func (s *Server) newTaskView(t wftype.Task, p *principal) taskView {
	t = redact.Task(t) // credentials in URLs are not shown
	v := taskView{
		TaskID: t.ID.String(), TaskType: t.TaskType, SchemaName: t.SchemaName, Scope: string(t.Scope),
		ExecutionMode: string(t.ExecutionMode), Status: string(t.Status), DedupKey: t.DedupKey,
		Inputs: nonNullJSON(t.Inputs, "{}"), Outputs: nullableJSON(t.Outputs), Progress: nullableJSON(t.Progress),
		Error: t.Error, Priority: t.Priority, Attempts: t.Attempts, RetryCount: t.RetryCount, MaxRetries: t.MaxRetries, Snoozes: t.Snoozes,
		CreatedAt: t.Timestamp, RunAfter: t.RunAfter, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt,
		LockedUntil: t.LockedUntil, LastHeartbeatAt: t.LastHeartbeatAt, StatusURL: s.url("/tasks/" + t.ID.String()),
	}
	if p != nil && (p.role == config.RoleWorker || p.role == config.RoleAdmin) {
		v.OwnerID = t.OwnerID
	}
	return v
}

// submissionView answers a task submission (schema Submission).
type submissionView struct {
	TaskID       string          `json:"task_id"`
	Status       string          `json:"status"`
	StatusURL    string          `json:"status_url"`
	Deduplicated bool            `json:"deduplicated"`
	Outputs      json.RawMessage `json:"outputs,omitempty"`
	Error        *string         `json:"error,omitempty"`
}

func (s *Server) newSubmissionView(t wftype.Task, dedup bool) submissionView {
	return submissionView{
		TaskID: t.ID.String(), Status: string(t.Status), StatusURL: s.url("/tasks/" + t.ID.String()),
		Deduplicated: dedup,
	}
}

// writeSubmission answers a submission: 202 Accepted with a Location for a
// new task, 200 for one that deduplicated to a live task.
func (s *Server) writeSubmission(w http.ResponseWriter, t wftype.Task, dedup bool) {
	v := s.newSubmissionView(t, dedup)
	w.Header().Set("Location", v.StatusURL)
	status := http.StatusAccepted
	if dedup {
		status = http.StatusOK
	}
	writeJSON(w, status, v)
}

// eventView is an event as the API shows it (schema Event).
type eventView struct {
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

func newEventView(e store.Event) eventView {
	return eventView{
		EventID: e.ID.String(), EventType: e.EventType, Scope: e.Scope, SchemaName: e.SchemaName,
		Payload: nonNullJSON(e.Payload, "{}"), Status: e.Status, DedupKey: e.DedupKey, Attempts: e.Attempts,
		CreatedAt: e.CreatedAt.UTC(), RunAfter: e.RunAfter.UTC(), Error: e.Error, DeadLetteredAt: e.DeadLetteredAt,
	}
}

// catalogView is a catalog as the API shows it (schema Catalog).
type catalogView struct {
	CatalogID   string          `json:"catalog_id"`
	SchemaName  string          `json:"schema_name"`
	Title       *string         `json:"title,omitempty"`
	Description *string         `json:"description,omitempty"`
	Metadata    json.RawMessage `json:"metadata"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

func newCatalogView(c store.Catalog) catalogView {
	return catalogView{
		CatalogID: c.ID, SchemaName: c.SchemaName, Title: c.Title, Description: c.Description,
		Metadata: nonNullJSON(c.Metadata, "{}"), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

// collectionView is a collection as the API shows it (schema Collection).
type collectionView struct {
	CatalogID    string          `json:"catalog_id"`
	CollectionID string          `json:"collection_id"`
	Title        *string         `json:"title,omitempty"`
	LayerConfig  json.RawMessage `json:"layer_config"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

func newCollectionView(c store.Collection) collectionView {
	return collectionView{
		CatalogID: c.CatalogID, CollectionID: c.ID, Title: c.Title,
		LayerConfig: nonNullJSON(c.LayerConfig, "{}"), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

// assetView is an asset (schemas Asset).
type assetView struct {
	CatalogID    string          `json:"catalog_id"`
	AssetID      string          `json:"asset_id"`
	CollectionID *string         `json:"collection_id"`
	URI          string          `json:"uri"`
	Kind         string          `json:"kind"`
	Status       string          `json:"status"`
	Metadata     json.RawMessage `json:"metadata"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

func newAssetView(a store.Asset) assetView {
	return assetView{
		CatalogID: a.CatalogID, AssetID: a.ID, CollectionID: a.CollectionID, URI: a.URI, Kind: a.Kind,
		Status: a.Status, Metadata: nonNullJSON(a.Metadata, "{}"), CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

// listView is one page of a list (schemas *List).
type listView[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// nonNullJSON returns raw, or def when raw is empty or null.
func nonNullJSON(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(def)
	}
	return raw
}

// nullableJSON returns raw, or nil (omitted) when it is empty or null.
func nullableJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// writeJSON sends v as JSON with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
