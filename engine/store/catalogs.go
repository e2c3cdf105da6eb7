package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wfhq/wf/wftype"
)

// Catalog is one row of catalog.catalogs: a tenant and the schema_name its
// tasks carry.
type Catalog struct {
	ID          string
	SchemaName  string
	Title       *string
	Description *string
	Metadata    json.RawMessage
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Collection is one row of catalog.collections: a layer of a catalog and its
// layer configuration.
type Collection struct {
	CatalogID   string
	ID          string
	Title       *string
	LayerConfig json.RawMessage
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// NewCatalog is a catalog to create.
type NewCatalog struct {
	ID          string
	SchemaName  string
	Title       *string
	Description *string
	Metadata    json.RawMessage // default {}
}

// NewCollection is a collection to create.
type NewCollection struct {
	CatalogID   string
	ID          string
	Title       *string
	LayerConfig json.RawMessage // default {}
}

// Page is one page of a keyset-paginated list by id.
type Page struct {
	// After is the last id of the previous page ("" for the first page).
	After string
	// Limit is the page size: default 100, at most 1000.
	Limit int
}

func (p Page) limit() int { return pageLimit(p.Limit) }

// pageLimit is the size of a page asked for as limit: default 100, at most
// 1000.
func pageLimit(limit int) int {
	if limit <= 0 {
		return 100
	}
	return min(limit, 1000)
}

const catalogColumns = `catalog_id, schema_name, title, description, metadata, created_at, updated_at`

const collectionColumns = `catalog_id, collection_id, title, layer_config, created_at, updated_at`

func scanCatalog(row pgx.Row) (Catalog, error) {
	var c Catalog
	var meta []byte
	if err := row.Scan(&c.ID, &c.SchemaName, &c.Title, &c.Description, &meta, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return c, err
	}
	c.Metadata = meta
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

func scanCollection(row pgx.Row) (Collection, error) {
	var c Collection
	var cfg []byte
	if err := row.Scan(&c.CatalogID, &c.ID, &c.Title, &cfg, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return c, err
	}
	c.LayerConfig = cfg
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

// constraintOf returns the name of the constraint a PostgreSQL error broke.
func constraintOf(err error) (code, constraint string) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, pgErr.ConstraintName
	}
	return "", ""
}

// CreateCatalog inserts a catalog. It fails with wftype.ErrConflict when the
// id or the schema name is taken, or when a schema of that name exists that
// wf did not create (ErrNotOwned): a tenant never gets a schema it did not
// get from wf.
func (s *Store) CreateCatalog(ctx context.Context, c NewCatalog) (Catalog, error) {
	foreign, err := s.SchemaForeign(ctx, c.SchemaName)
	if err != nil {
		return Catalog{}, err
	}
	if foreign {
		return Catalog{}, fmt.Errorf("schema_name %q names a schema that exists and was %w: %w", c.SchemaName, ErrNotOwned, wftype.ErrConflict)
	}
	const q = `
INSERT INTO catalog.catalogs (catalog_id, schema_name, title, description, metadata)
VALUES ($1, $2, $3, $4, coalesce($5::jsonb, '{}'::jsonb))
RETURNING ` + catalogColumns
	var meta any
	if len(c.Metadata) > 0 {
		meta = string(c.Metadata)
	}
	row, err := scanCatalog(s.db.QueryRow(ctx, q, c.ID, c.SchemaName, c.Title, c.Description, meta))
	if code, constraint := constraintOf(err); code == "23505" {
		if constraint == "catalogs_schema_name_key" {
			return row, fmt.Errorf("schema_name %q is used by another catalog: %w", c.SchemaName, wftype.ErrConflict)
		}
		return row, fmt.Errorf("catalog %q already exists: %w", c.ID, wftype.ErrConflict)
	}
	return row, wrap("creating catalog", err)
}

// GetCatalog returns one catalog, or wftype.ErrNotFound.
func (s *Store) GetCatalog(ctx context.Context, id string) (Catalog, error) {
	const q = `SELECT ` + catalogColumns + ` FROM catalog.catalogs WHERE catalog_id = $1`
	c, err := scanCatalog(s.db.QueryRow(ctx, q, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("catalog %q: %w", id, wftype.ErrNotFound)
	}
	return c, wrap("reading catalog", err)
}

// ListCatalogs returns catalogs ordered by id, one page at a time. When ids
// is not nil only those catalogs are listed (a token limited to catalogs).
func (s *Store) ListCatalogs(ctx context.Context, ids []string, p Page) ([]Catalog, error) {
	const q = `
SELECT ` + catalogColumns + `
FROM catalog.catalogs
WHERE ($1::text[] IS NULL OR catalog_id = ANY($1))
  AND catalog_id > $2
ORDER BY catalog_id
LIMIT $3`
	if ids != nil && len(ids) == 0 {
		return nil, nil
	}
	return queryAll(ctx, s.db, "listing catalogs", q, scanCatalog, ids, p.After, p.limit())
}

// DeleteCatalog deletes a catalog and (by cascade) its collections, records
// the deletion (catalog.deletions), and returns what it deleted;
// wftype.ErrNotFound when there was none. Run it in
// the transaction that writes the catalog.deleted event.
func (s *Store) DeleteCatalog(ctx context.Context, id string) (Catalog, []string, error) {
	const q = `
WITH cols AS (
    SELECT coalesce(array_agg(collection_id ORDER BY collection_id), '{}') AS ids
    FROM catalog.collections WHERE catalog_id = $1
),
deleted AS (
    DELETE FROM catalog.catalogs c
    USING cols
    WHERE c.catalog_id = $1
    RETURNING c.catalog_id, c.schema_name, c.title, c.description, c.metadata, c.created_at, c.updated_at, cols.ids
),
-- The registry's record of the deletion, which catalog_drop checks.
recorded AS (
    INSERT INTO catalog.deletions (catalog_id, schema_name)
    SELECT catalog_id, schema_name FROM deleted
    ON CONFLICT (catalog_id, collection_id, schema_name) DO UPDATE SET deleted_at = now()
)
SELECT * FROM deleted`
	var c Catalog
	var meta []byte
	var cols []string
	err := s.db.QueryRow(ctx, q, id).Scan(&c.ID, &c.SchemaName, &c.Title, &c.Description, &meta, &c.CreatedAt, &c.UpdatedAt, &cols)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, nil, fmt.Errorf("catalog %q: %w", id, wftype.ErrNotFound)
	}
	if err != nil {
		return c, nil, wrap("deleting catalog", err)
	}
	c.Metadata = meta
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, cols, nil
}

// SchemaNamesOf returns the schema names of the catalogs with the given ids
// (those that exist), for limiting a token to its catalogs' tasks.
func (s *Store) SchemaNamesOf(ctx context.Context, ids []string) ([]string, error) {
	const q = `SELECT schema_name FROM catalog.catalogs WHERE catalog_id = ANY($1::text[]) ORDER BY schema_name`
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.db.Query(ctx, q, ids)
	if err != nil {
		return nil, wrap("reading catalog schema names", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, wrap("reading catalog schema names", err)
}

// CatalogIDBySchema returns the id of the catalog whose tenant schema is
// schemaName, or wftype.ErrNotFound.
func (s *Store) CatalogIDBySchema(ctx context.Context, schemaName string) (string, error) {
	const q = `SELECT catalog_id FROM catalog.catalogs WHERE schema_name = $1`
	var id string
	err := s.db.QueryRow(ctx, q, schemaName).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("no catalog has schema_name %q: %w", schemaName, wftype.ErrNotFound)
	}
	return id, wrap("looking up catalog by schema name", err)
}

// CreateCollection inserts a collection into its catalog. It fails with
// wftype.ErrNotFound when the catalog does not exist and wftype.ErrConflict
// when the collection does.
func (s *Store) CreateCollection(ctx context.Context, c NewCollection) (Collection, error) {
	const q = `
INSERT INTO catalog.collections (catalog_id, collection_id, title, layer_config)
VALUES ($1, $2, $3, coalesce($4::jsonb, '{}'::jsonb))
RETURNING ` + collectionColumns
	var cfg any
	if len(c.LayerConfig) > 0 {
		cfg = string(c.LayerConfig)
	}
	row, err := scanCollection(s.db.QueryRow(ctx, q, c.CatalogID, c.ID, c.Title, cfg))
	switch code, _ := constraintOf(err); code {
	case "23505":
		return row, fmt.Errorf("collection %q already exists in catalog %q: %w", c.ID, c.CatalogID, wftype.ErrConflict)
	case "23503":
		return row, fmt.Errorf("catalog %q: %w", c.CatalogID, wftype.ErrNotFound)
	}
	return row, wrap("creating collection", err)
}

// GetCollection returns one collection, or wftype.ErrNotFound.
func (s *Store) GetCollection(ctx context.Context, catalogID, id string) (Collection, error) {
	const q = `SELECT ` + collectionColumns + ` FROM catalog.collections WHERE catalog_id = $1 AND collection_id = $2`
	c, err := scanCollection(s.db.QueryRow(ctx, q, catalogID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("collection %q of catalog %q: %w", id, catalogID, wftype.ErrNotFound)
	}
	return c, wrap("reading collection", err)
}

// ListCollections returns the collections of a catalog ordered by id, one
// page at a time.
func (s *Store) ListCollections(ctx context.Context, catalogID string, p Page) ([]Collection, error) {
	const q = `
SELECT ` + collectionColumns + `
FROM catalog.collections
WHERE catalog_id = $1 AND collection_id > $2
ORDER BY collection_id
LIMIT $3`
	rows, err := s.db.Query(ctx, q, catalogID, p.After, p.limit())
	if err != nil {
		return nil, wrap("listing collections", err)
	}
	defer rows.Close()
	var out []Collection
	for rows.Next() {
		c, err := scanCollection(rows)
		if err != nil {
			return nil, wrap("listing collections", err)
		}
		out = append(out, c)
	}
	return out, wrap("listing collections", rows.Err())
}

// DeleteCollection deletes one collection, records the deletion
// (catalog.deletions), and returns it; wftype.ErrNotFound when there was
// none. Run it in the transaction that writes the
// collection.deleted event.
func (s *Store) DeleteCollection(ctx context.Context, catalogID, id string) (Collection, error) {
	const q = `
WITH deleted AS (
    DELETE FROM catalog.collections WHERE catalog_id = $1 AND collection_id = $2
    RETURNING ` + collectionColumns + `
),
-- The registry's record of the deletion, which collection_drop checks.
recorded AS (
    INSERT INTO catalog.deletions (catalog_id, collection_id, schema_name)
    SELECT d.catalog_id, d.collection_id, c.schema_name
    FROM deleted d JOIN catalog.catalogs c USING (catalog_id)
    ON CONFLICT (catalog_id, collection_id, schema_name) DO UPDATE SET deleted_at = now()
)
SELECT * FROM deleted`
	c, err := scanCollection(s.db.QueryRow(ctx, q, catalogID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("collection %q of catalog %q: %w", id, catalogID, wftype.ErrNotFound)
	}
	return c, wrap("deleting collection", err)
}
