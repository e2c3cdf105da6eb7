package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"

	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/redact"
)

// Asset event types.
const (
	EventAssetCreated  = "asset.created"
	EventAssetUpdated  = "asset.updated"
	EventAssetArchived = "asset.archived"
	EventAssetDeleted  = "asset.deleted"
)

// assetIDRE is the rule of an asset id (the ingestion's asset_id).
// At most maxAssetID bytes, checked apart (a counted repetition compiles
// to a program ~250 times larger).
var assetIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// maxAssetID is the longest asset id.
const maxAssetID = 255

// AssetIDRule describes a valid asset id, for error messages.
const AssetIDRule = "1 to 255 letters, digits, '.', '_' or '-', starting with a letter or digit"

// maxAssetURI bounds an asset's URI.
const maxAssetURI = 2048

// ValidAssetID reports whether s is a valid asset id.
func ValidAssetID(s string) bool { return len(s) <= maxAssetID && assetIDRE.MatchString(s) }

// Shown returns a as it may be shown to anyone (the HTTP API, the CLI, the
// dashboard, events): the password and signed or token query parameters of
// its URI, and of any URL in its metadata, redacted (internal/redact). The
// stored asset keeps them, for the handlers that read it.
func Shown(a store.Asset) store.Asset {
	a.URI, a.Metadata = redact.URL(a.URI), redact.JSON(a.Metadata)
	return a
}

// checkAsset validates what a new asset names.
func checkAsset(a store.NewAsset) spec.InputErrors {
	var errs spec.InputErrors
	if !ValidAssetID(a.ID) {
		errs = append(errs, spec.InputError{Pointer: "/asset_id", Message: "must be " + AssetIDRule})
	}
	if a.URI == "" || len(a.URI) > maxAssetURI {
		errs = append(errs, spec.InputError{Pointer: "/uri", Message: fmt.Sprintf("must be 1 to %d characters: where the asset is (a path or a URL)", maxAssetURI)})
	}
	if a.CollectionID != nil && !ValidID(*a.CollectionID) {
		errs = append(errs, spec.InputError{Pointer: "/collection_id", Message: "must be " + IDRule})
	}
	errs = checkKind(errs, a.Kind, true)
	return checkObject(errs, "/metadata", a.Metadata)
}

func checkKind(errs spec.InputErrors, kind string, emptyOK bool) spec.InputErrors {
	switch kind {
	case store.AssetVector, store.AssetRaster, store.AssetOther:
		return errs
	case "":
		if emptyOK {
			return errs
		}
	}
	return append(errs, spec.InputError{Pointer: "/kind", Message: "must be one of vector, raster, other"})
}

// EventNote adds fields to the payload of the asset event a change emits,
// so that subscriptions can tell changes apart: gcs_storage_event notes
// {"origin": "storage", "format": …} on the assets an upload made, and the
// shipped subscriptions start ingestion for those only (an ingestion's own
// record of its source carries no origin, so it starts nothing). A note
// never replaces the asset's own fields.
type EventNote map[string]any

// assetPayload is the payload of every asset event.
func assetPayload(a store.Asset, notes ...EventNote) map[string]any {
	p := map[string]any{}
	for _, n := range notes {
		maps.Copy(p, n)
	}
	maps.Copy(p, map[string]any{"catalog_id": a.CatalogID, "asset_id": a.ID, "uri": a.URI, "kind": a.Kind, "status": a.Status})
	if a.CollectionID != nil {
		p["collection_id"] = *a.CollectionID
	}
	return p
}

// inCatalogTx is write with the catalog read first (so its schema_name
// names the events' tenant) and a named collection checked to belong to it.
func inCatalogTx[T any](ctx context.Context, r *Registry, doing, catalogID string, collectionID *string,
	fn func(st *store.Store, cat store.Catalog) (T, error)) (T, error) {
	return write(ctx, r, doing, func(st *store.Store) (T, error) {
		var zero T
		cat, err := st.GetCatalog(ctx, catalogID)
		if err != nil {
			return zero, err
		}
		if collectionID != nil {
			if _, err := st.GetCollection(ctx, catalogID, *collectionID); err != nil {
				return zero, err
			}
		}
		return fn(st, cat)
	})
}

// AddAsset validates and inserts an asset and emits asset.created, in one
// transaction. It fails with a *ValidationError, wftype.ErrNotFound for a
// missing catalog or collection, or wftype.ErrConflict for a taken id.
func (r *Registry) AddAsset(ctx context.Context, a store.NewAsset) (store.Asset, error) {
	if errs := checkAsset(a); len(errs) > 0 {
		return store.Asset{}, &ValidationError{Errors: errs}
	}
	doing := fmt.Sprintf("adding asset %q to catalog %q", a.ID, a.CatalogID)
	return inCatalogTx(ctx, r, doing, a.CatalogID, a.CollectionID, func(st *store.Store, cat store.Catalog) (store.Asset, error) {
		if err := r.checkURI(cat.SchemaName, a.URI); err != nil {
			return store.Asset{}, err
		}
		out, err := st.CreateAsset(ctx, a)
		if err != nil {
			return out, err
		}
		return out, r.emit(ctx, st, EventAssetCreated, events.ScopeAsset, cat.SchemaName, assetPayload(out))
	})
}

// checkURI checks an asset's URI against the tenant's folder, as a task's
// file inputs are checked.
func (r *Registry) checkURI(tenant, uri string) error {
	if r.files == nil {
		return nil
	}
	if err := r.files.CheckFile(tenant, uri); err != nil {
		return &ValidationError{Errors: spec.InputErrors{{Pointer: "/uri", Message: err.Error()}}}
	}
	return nil
}

// RecordAsset creates the asset or brings it up to date (URI, collection,
// kind, active again) and emits asset.created or asset.updated, in one
// transaction: what an ingestion does with its source. Notes go into the
// event's payload.
func (r *Registry) RecordAsset(ctx context.Context, a store.NewAsset, notes ...EventNote) (store.Asset, error) {
	if errs := checkAsset(a); len(errs) > 0 {
		return store.Asset{}, &ValidationError{Errors: errs}
	}
	doing := fmt.Sprintf("recording asset %q of catalog %q", a.ID, a.CatalogID)
	return inCatalogTx(ctx, r, doing, a.CatalogID, a.CollectionID, func(st *store.Store, cat store.Catalog) (store.Asset, error) {
		out, created, err := st.RecordAsset(ctx, a)
		if err != nil {
			return out, err
		}
		typ := EventAssetUpdated
		if created {
			typ = EventAssetCreated
		}
		return out, r.emit(ctx, st, typ, events.ScopeAsset, cat.SchemaName, assetPayload(out, notes...))
	})
}

// GetAsset returns one asset, or an error wrapping wftype.ErrNotFound.
func (r *Registry) GetAsset(ctx context.Context, catalogID, id string) (store.Asset, error) {
	return r.store.GetAsset(ctx, catalogID, id)
}

// ListAssets returns the assets of an existing catalog (else
// wftype.ErrNotFound) ordered by id, one page at a time.
func (r *Registry) ListAssets(ctx context.Context, catalogID string, f store.AssetFilter, p store.Page) ([]store.Asset, error) {
	if _, err := r.store.GetCatalog(ctx, catalogID); err != nil {
		return nil, err
	}
	return r.store.ListAssets(ctx, catalogID, f, p)
}

// UpdateAsset changes an asset's status, kind or metadata (merged) and
// emits, in the same transaction, asset.archived or asset.deleted when the
// status became archived or deleted, else asset.updated. Notes go into the
// event's payload.
func (r *Registry) UpdateAsset(ctx context.Context, catalogID, id string, p store.AssetPatch, notes ...EventNote) (store.Asset, error) {
	var errs spec.InputErrors
	if p.Status != nil {
		switch *p.Status {
		case store.AssetActive, store.AssetArchived, store.AssetDeleted:
		default:
			errs = append(errs, spec.InputError{Pointer: "/status", Message: "must be one of active, archived, deleted"})
		}
	}
	if p.Kind != nil {
		errs = checkKind(errs, *p.Kind, false)
	}
	errs = checkObject(errs, "/metadata", p.Metadata)
	if len(errs) > 0 {
		return store.Asset{}, &ValidationError{Errors: errs}
	}
	doing := fmt.Sprintf("updating asset %q of catalog %q", id, catalogID)
	return inCatalogTx(ctx, r, doing, catalogID, nil, func(st *store.Store, cat store.Catalog) (store.Asset, error) {
		before, after, err := st.UpdateAsset(ctx, catalogID, id, p)
		if err != nil {
			return after, err
		}
		typ := EventAssetUpdated
		if after.Status != before.Status {
			switch after.Status {
			case store.AssetArchived:
				typ = EventAssetArchived
			case store.AssetDeleted:
				typ = EventAssetDeleted
			}
		}
		return after, r.emit(ctx, st, typ, events.ScopeAsset, cat.SchemaName, assetPayload(after, notes...))
	})
}

// RemoveAsset marks an asset deleted (its row stays, so that the feature
// versions naming it keep a meaning) and emits asset.deleted.
func (r *Registry) RemoveAsset(ctx context.Context, catalogID, id string) (store.Asset, error) {
	deleted := store.AssetDeleted
	return r.UpdateAsset(ctx, catalogID, id, store.AssetPatch{Status: &deleted})
}

// MarshalAssetMetadata encodes metadata for an AssetPatch.
func MarshalAssetMetadata(m map[string]any) (json.RawMessage, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("error encoding asset metadata: %w", err)
	}
	return b, nil
}
