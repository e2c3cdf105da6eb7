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
package collections

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// Handler names.
const (
	// CollectionDropName drops a deleted collection's feature table.
	CollectionDropName = "collection_drop"
	// CatalogDropName drops a deleted catalog's tenant schema.
	CatalogDropName = "catalog_drop"
)

// Handlers runs the drop tasks.
type Handlers struct {
	store *store.Store
}

// New returns the drop handlers, writing through st (on a pool).
func New(st *store.Store) (*Handlers, error) {
	if st == nil {
		return nil, errors.New("error creating the drop handlers: the store is nil")
	}
	return &Handlers{store: st}, nil
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

// decode reads inputs strictly.
func decode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// DropCollection drops the feature table of the deleted collection named in
// the task's inputs (see store.DropFeatureTable for a collection registered
// again meanwhile).
func (h *Handlers) DropCollection(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	var in collectionDropInputs
	if err := decode(task.Inputs, &in); err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error reading collection_drop inputs: %w", err))
	}
	t, err := store.NewFeatureTable(in.SchemaName, in.CollectionID)
	if err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error dropping collection %s/%s: %w", in.CatalogID, in.CollectionID, err))
	}
	res, err := h.store.DropFeatureTable(ctx, in.CatalogID, t)
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
	if err := decode(task.Inputs, &in); err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error reading catalog_drop inputs: %w", err))
	}
	res, err := h.store.DropTenantSchema(ctx, in.CatalogID, in.SchemaName, in.Collections)
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
