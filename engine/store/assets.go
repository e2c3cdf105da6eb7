package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// Asset kinds and statuses (catalog.assets).
const (
	AssetVector = "vector"
	AssetRaster = "raster"
	AssetOther  = "other"

	AssetActive   = "active"
	AssetArchived = "archived"
	AssetDeleted  = "deleted"
)

// Asset is one row of catalog.assets: a file or object a catalog knows.
type Asset struct {
	CatalogID string
	ID        string
	// CollectionID is the collection it feeds, or nil.
	CollectionID *string
	URI          string
	Kind         string
	Status       string
	Metadata     json.RawMessage
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// NewAsset is an asset to create or record.
type NewAsset struct {
	CatalogID    string
	ID           string
	CollectionID *string
	URI          string
	Kind         string          // default other
	Metadata     json.RawMessage // default {}
}

// AssetPatch changes an asset: each set field replaces the stored one, but
// Metadata is merged into the stored object (top-level keys).
type AssetPatch struct {
	Status   *string
	Kind     *string
	Metadata json.RawMessage
}

const assetColumns = `catalog_id, asset_id, collection_id, uri, kind, status, metadata, created_at, updated_at`

func scanAsset(row pgx.Row) (Asset, error) {
	var a Asset
	var meta []byte
	if err := row.Scan(&a.CatalogID, &a.ID, &a.CollectionID, &a.URI, &a.Kind, &a.Status, &meta, &a.CreatedAt, &a.UpdatedAt); err != nil {
		return a, err
	}
	a.Metadata = meta
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return a, nil
}

// assetError maps the errors of an asset statement to wftype's sentinels.
func assetError(doing string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("error %s: %w", doing, wftype.ErrNotFound)
	}
	switch code, _ := constraintOf(err); code {
	case "23505":
		return fmt.Errorf("error %s: the asset exists: %w", doing, wftype.ErrConflict)
	case "23503":
		return fmt.Errorf("error %s: the catalog does not exist: %w", doing, wftype.ErrNotFound)
	}
	return wrap(doing, err)
}

// CreateAsset inserts an asset; wftype.ErrConflict when its id is taken in
// the catalog, wftype.ErrNotFound when the catalog does not exist.
func (s *Store) CreateAsset(ctx context.Context, a NewAsset) (Asset, error) {
	const q = `
INSERT INTO catalog.assets (catalog_id, asset_id, collection_id, uri, kind, metadata)
VALUES ($1, $2, $3, $4, coalesce(nullif($5, ''), 'other'), coalesce($6::jsonb, '{}'::jsonb))
RETURNING ` + assetColumns
	out, err := scanAsset(s.db.QueryRow(ctx, q, a.CatalogID, a.ID, a.CollectionID, a.URI, a.Kind, jsonArg(a.Metadata)))
	return out, assetError("creating asset "+a.ID, err)
}

// RecordAsset creates the asset, or updates its URI, collection and kind
// (and makes it active again) when it exists: what an ingestion does with
// its source. created says which happened.
func (s *Store) RecordAsset(ctx context.Context, a NewAsset) (out Asset, created bool, err error) {
	const q = `
INSERT INTO catalog.assets AS a (catalog_id, asset_id, collection_id, uri, kind, metadata)
VALUES ($1, $2, $3, $4, coalesce(nullif($5, ''), 'other'), coalesce($6::jsonb, '{}'::jsonb))
ON CONFLICT (catalog_id, asset_id) DO UPDATE
SET collection_id = excluded.collection_id, uri = excluded.uri, kind = excluded.kind,
    status = 'active', metadata = a.metadata || excluded.metadata, updated_at = now()
RETURNING ` + assetColumns + `, (xmax = 0)`
	var meta []byte
	row := s.db.QueryRow(ctx, q, a.CatalogID, a.ID, a.CollectionID, a.URI, a.Kind, jsonArg(a.Metadata))
	err = row.Scan(&out.CatalogID, &out.ID, &out.CollectionID, &out.URI, &out.Kind, &out.Status, &meta,
		&out.CreatedAt, &out.UpdatedAt, &created)
	out.Metadata = meta
	out.CreatedAt, out.UpdatedAt = out.CreatedAt.UTC(), out.UpdatedAt.UTC()
	return out, created, assetError("recording asset "+a.ID, err)
}

// GetAsset returns one asset, or wftype.ErrNotFound.
func (s *Store) GetAsset(ctx context.Context, catalogID, id string) (Asset, error) {
	q := `SELECT ` + assetColumns + ` FROM catalog.assets WHERE catalog_id = $1 AND asset_id = $2`
	a, err := scanAsset(s.db.QueryRow(ctx, q, catalogID, id))
	return a, assetError("reading asset "+id, err)
}

// AssetFilter selects the assets ListAssets returns.
type AssetFilter struct {
	// Status keeps the assets of these statuses; empty keeps active and
	// archived (deleted ones only when asked for).
	Status []string
	// CollectionID keeps the assets of one collection; "" keeps all.
	CollectionID string
}

// ListAssets returns a catalog's assets ordered by id, one page at a time.
func (s *Store) ListAssets(ctx context.Context, catalogID string, f AssetFilter, p Page) ([]Asset, error) {
	status := f.Status
	if len(status) == 0 {
		status = []string{AssetActive, AssetArchived}
	}
	const q = `
SELECT ` + assetColumns + `
FROM catalog.assets
WHERE catalog_id = $1 AND asset_id > $2 AND status = ANY($3::text[])
  AND ($4 = '' OR collection_id = $4)
ORDER BY asset_id
LIMIT $5`
	return queryAll(ctx, s.db, "listing assets", q, scanAsset, catalogID, p.After, status, f.CollectionID, p.limit())
}

// UpdateAsset applies a patch and returns the asset before and after it;
// wftype.ErrNotFound when there is none. Run it in the transaction that
// writes the asset's event.
func (s *Store) UpdateAsset(ctx context.Context, catalogID, id string, p AssetPatch) (before, after Asset, err error) {
	before, err = scanAsset(s.db.QueryRow(ctx,
		`SELECT `+assetColumns+` FROM catalog.assets WHERE catalog_id = $1 AND asset_id = $2 FOR UPDATE`, catalogID, id))
	if err != nil {
		return before, after, assetError("updating asset "+id, err)
	}
	const q = `
UPDATE catalog.assets
SET status = coalesce($3, status), kind = coalesce($4, kind),
    metadata = metadata || coalesce($5::jsonb, '{}'::jsonb), updated_at = now()
WHERE catalog_id = $1 AND asset_id = $2
RETURNING ` + assetColumns
	after, err = scanAsset(s.db.QueryRow(ctx, q, catalogID, id, p.Status, p.Kind, jsonArg(p.Metadata)))
	return before, after, assetError("updating asset "+id, err)
}

// jsonArg passes an optional JSON document: nil when empty.
func jsonArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}
