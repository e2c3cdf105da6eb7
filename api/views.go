package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// newAttemptViews converts an attempt history; the instance names are shown
// to workers and admins only, as a task's owner_id is.
func newAttemptViews(as []wftype.Attempt, p *principal) []wftype.Attempt {
	out := make([]wftype.Attempt, 0, len(as))
	for _, a := range redact.Attempts(as) {
		v := wftype.Attempt{Attempt: a.Attempt, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt.UTC(), Outcome: a.Outcome, Error: a.Error}
		if a.Outcome == wftype.StatusPending {
			v.Outcome = wftype.AttemptRetried
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
func (s *Server) newTaskView(t wftype.Task, p *principal) wftype.TaskView {
	t = redact.Task(t) // credentials in URLs are not shown
	v := wftype.TaskView{
		TaskID: t.ID.String(), TaskType: t.TaskType, SchemaName: t.SchemaName, Scope: t.Scope,
		ExecutionMode: t.ExecutionMode, Status: t.Status, DedupKey: t.DedupKey,
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

// withWaitingReasons fills the waiting_reason of the PENDING tasks among
// views (rows, in the same order): one statement for the whole page (see
// store.WaitingReasons), none when no task is PENDING.
func (s *Server) withWaitingReasons(ctx context.Context, rows []wftype.Task, views []wftype.TaskView) error {
	reasons, err := s.store.WaitingReasons(ctx, rows, s.cfg.Rules.Limits(), s.cfg.Clock.DBNow())
	if err != nil {
		return err
	}
	for i := range views {
		views[i].WaitingReason = reasons[rows[i].ID]
	}
	return nil
}

// newSubmissionView answers the submission of t.
func (s *Server) newSubmissionView(t wftype.Task, dedup bool) wftype.SubmissionView {
	return wftype.SubmissionView{
		TaskID: t.ID.String(), Status: t.Status, StatusURL: s.url("/tasks/" + t.ID.String()),
		Deduplicated: dedup,
	}
}

// writeSubmission answers a submission: 202 Accepted with a Location for a
// new task, 200 for one that deduplicated to a live task.
func (s *Server) writeSubmission(w http.ResponseWriter, t wftype.Task, dedup bool) {
	writeSubmissionView(w, s.newSubmissionView(t, dedup))
}

// writeSubmissionView answers a submission with its view (writeSubmission).
func writeSubmissionView(w http.ResponseWriter, v wftype.SubmissionView) {
	w.Header().Set("Location", v.StatusURL)
	status := http.StatusAccepted
	if v.Deduplicated {
		status = http.StatusOK
	}
	writeJSON(w, status, v)
}

// newEventView converts an event row.
func newEventView(e store.Event) wftype.EventView {
	return wftype.EventView{
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
	// Links make GET /catalogs/{catalog_id} an OGC API landing page.
	Links []link `json:"links,omitempty"`
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
	// The OGC API – Features members of a collection read with GET
	// (withOGC).
	ID         string      `json:"id,omitempty"`
	ItemType   string      `json:"itemType,omitempty"`
	Links      []link      `json:"links,omitempty"`
	Extent     *extentView `json:"extent,omitempty"`
	ItemCount  *int64      `json:"itemCount,omitempty"`
	CRS        []string    `json:"crs,omitempty"`
	StorageCRS string      `json:"storageCrs,omitempty"`
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

// newAssetView converts an asset, credentials in its URI and metadata
// redacted (registry.Shown).
func newAssetView(a store.Asset) assetView {
	a = registry.Shown(a)
	return assetView{
		CatalogID: a.CatalogID, AssetID: a.ID, CollectionID: a.CollectionID, URI: a.URI, Kind: a.Kind,
		Status: a.Status, Metadata: nonNullJSON(a.Metadata, "{}"), CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
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

// writeCreated answers 201 Created with v as JSON and the new resource's
// URL, of path, in the Location header.
func (s *Server) writeCreated(w http.ResponseWriter, path string, v any) {
	w.Header().Set("Location", s.url(path))
	writeJSON(w, http.StatusCreated, v)
}

// writeJSON sends v as JSON with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
