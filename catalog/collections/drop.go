// Package collections holds the builtin handlers that remove a deleted
// collection's or catalog's feature data. Deleting from the registry writes
// collection.deleted or catalog.deleted in the same transaction; the
// Subscriptions in specs/features.yaml turn those events into
// collection_drop and catalog_drop tasks, which these handlers run. They are
// idempotent: dropping what is gone reports "absent".
//
// Destruction is checked twice, whatever the inputs say: the store drops
// only schemas and tables that wf created (its ownership records), and only
// after confirming in the registry that the catalog or collection named is
// really deleted; a drop that fails either check fails for good.
//
// A drop that succeeds writes catalog.dropped or collection.dropped in the
// transaction that drops (payload: catalog_id, schema_name, collection_id
// or collections, outcome, task_id), so what must come after the database
// half (the cloud cleanup of specs/gcp.yaml) subscribes to those: it starts
// only once the data is gone, and never after a failed drop.
package collections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wfhq/wf/catalog/outbox"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// Handler names.
const (
	// CollectionDropName drops a deleted collection's feature table.
	CollectionDropName = "collection_drop"
	// CatalogDropName drops a deleted catalog's tenant schema.
	CatalogDropName = "catalog_drop"
)

// Events the drop handlers emit once the data is gone.
const (
	// EventCollectionDropped follows a collection_drop that succeeded.
	EventCollectionDropped = "collection.dropped"
	// EventCatalogDropped follows a catalog_drop that succeeded.
	EventCatalogDropped = "catalog.dropped"
)

// Handlers runs the drop tasks.
type Handlers struct {
	store *store.Store
	// events writes the dropped events in the drop's transaction, or
	// through the outbox when the catalog has its own database.
	events *outbox.Writer
}

// New returns the drop handlers, writing through st (the catalog's store,
// on a pool) and emitting into the queue through em (nil:
// events.NewEmitter(st), one database).
func New(st *store.Store, em *events.Emitter) (*Handlers, error) {
	if st == nil {
		return nil, errors.New("error creating the drop handlers: the store is nil")
	}
	if em == nil {
		em = events.NewEmitter(st)
	}
	return &Handlers{store: st, events: outbox.NewWriter(st, em)}, nil
}

// dropped writes the event that says a drop task's data is gone, through
// st (the drop's transaction), once per task.
func (h *Handlers) dropped(ctx context.Context, st *store.Store, task *wftype.Task, typ, schema string, payload map[string]any) error {
	payload["task_id"] = task.ID
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("error encoding %s: %w", typ, err)
	}
	scope := events.ScopeCatalog
	if typ == EventCollectionDropped {
		scope = events.ScopeCollection
	}
	err = h.events.Emit(ctx, st, events.Event{Type: typ, Scope: scope, SchemaName: schema, Payload: b,
		DedupKey: typ + ":" + task.ID.String()})
	if err != nil {
		return fmt.Errorf("error emitting %s: %w", typ, err)
	}
	return nil
}

// collectionDropInputs are a collection_drop task's inputs.
type collectionDropInputs struct {
	CatalogID    string `json:"catalog_id"`
	CollectionID string `json:"collection_id"`
	SchemaName   string `json:"schema_name"`
}

// catalogDropInputs are a catalog_drop task's inputs.
type catalogDropInputs struct {
	CatalogID   string   `json:"catalog_id"`
	SchemaName  string   `json:"schema_name"`
	Collections []string `json:"collections"`
}

// DropCollection drops the feature table of the deleted collection named in
// the task's inputs (see store.DropFeatureTable for a collection registered
// again meanwhile).
func (h *Handlers) DropCollection(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	var in collectionDropInputs
	if err := builtin.ReadInputs(task.Inputs, &in, "collection_drop inputs"); err != nil {
		return nil, err
	}
	t, err := store.NewFeatureTable(in.SchemaName, in.CollectionID)
	if err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error dropping collection %s/%s: %w", in.CatalogID, in.CollectionID, err))
	}
	var res store.DropResult
	err = h.events.InTx(ctx, func(st *store.Store) error {
		var err error
		if res, err = st.DropFeatureTable(ctx, in.CatalogID, t); err != nil {
			return err
		}
		return h.dropped(ctx, st, task, EventCollectionDropped, in.SchemaName, map[string]any{
			"catalog_id": in.CatalogID, "collection_id": in.CollectionID, "schema_name": in.SchemaName, "outcome": res.Outcome})
	})
	if errors.Is(err, store.ErrNotOwned) || errors.Is(err, store.ErrNotDeleted) {
		return nil, wftype.Permanent(err)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"catalog_id": in.CatalogID, "collection_id": in.CollectionID, "table": res.Table,
		"outcome": res.Outcome, "purged_rows": res.Purged,
	})
}

// DropCatalog drops the tenant schema of the deleted catalog named in the
// task's inputs (see store.DropTenantSchema for a schema used again
// meanwhile).
func (h *Handlers) DropCatalog(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	var in catalogDropInputs
	if err := builtin.ReadInputs(task.Inputs, &in, "catalog_drop inputs"); err != nil {
		return nil, err
	}
	var res store.SchemaDropResult
	err := h.events.InTx(ctx, func(st *store.Store) error {
		var err error
		if res, err = st.DropTenantSchema(ctx, in.CatalogID, in.SchemaName, in.Collections); err != nil {
			return err
		}
		collections := in.Collections
		if collections == nil {
			collections = []string{}
		}
		return h.dropped(ctx, st, task, EventCatalogDropped, in.SchemaName, map[string]any{
			"catalog_id": in.CatalogID, "schema_name": in.SchemaName, "collections": collections, "outcome": res.Outcome})
	})
	if errors.Is(err, store.ErrInvalidFeatureTable) || errors.Is(err, store.ErrNotOwned) || errors.Is(err, store.ErrNotDeleted) {
		return nil, wftype.Permanent(fmt.Errorf("error dropping catalog %s: %w", in.CatalogID, err))
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"catalog_id": in.CatalogID, "schema_name": res.Schema, "outcome": res.Outcome, "tables": res.Tables,
	})
}
