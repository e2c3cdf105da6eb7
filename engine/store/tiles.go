package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Vector tiles of a collection, rendered by PostGIS (ST_AsMVT and
// ST_AsMVTGeom) from the current versions of its features, and the version
// of a feature table's content that tile caches are keyed by.

// bumpFeaturesVersion gives t's content a new version, a random UUID: it
// never repeats, not for a table dropped and made again, nor in another
// database or a restored one writing to the same tile cache (a transaction
// id would). Run it in the transaction that changes the rows.
func bumpFeaturesVersion(ctx context.Context, tx pgx.Tx, t FeatureTable) error {
	_, err := tx.Exec(ctx, `
UPDATE catalog.owned_tables SET features_version = gen_random_uuid()::text
WHERE schema_name = $1 AND table_name = $2`, t.Schema, t.Collection)
	if err != nil {
		return fmt.Errorf("recording the new version of %s: %w", t, err)
	}
	return nil
}

// FeaturesVersion returns the version of t's content: it changes in every
// transaction that changes t's rows. "" means t has never been written
// (or does not exist).
func (s *Store) FeaturesVersion(ctx context.Context, t FeatureTable) (string, error) {
	var v string
	err := s.db.QueryRow(ctx, `
SELECT features_version FROM catalog.owned_tables WHERE schema_name = $1 AND table_name = $2`,
		t.Schema, t.Collection).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return v, wrap("reading the version of "+t.String(), err)
}

// FeaturesExtent returns the bounding box [west, south, east, north] of
// the current features of t (PostGIS's ST_Extent over the GiST-indexed
// geom), nil when there are none.
func (s *Store) FeaturesExtent(ctx context.Context, t FeatureTable) ([]float64, error) {
	var w, south, e, n *float64
	err := s.db.QueryRow(ctx, `
SELECT ST_XMin(x), ST_YMin(x), ST_XMax(x), ST_YMax(x)
FROM (SELECT ST_Extent(geom) AS x FROM `+t.ident()+` WHERE upper_inf(validity) AND deleted_at IS NULL) e`).Scan(&w, &south, &e, &n)
	if err != nil {
		return nil, wrap("reading the extent of "+t.String(), err)
	}
	if w == nil {
		return nil, nil
	}
	return []float64{*w, *south, *e, *n}, nil
}

// TileExtent is the size of a tile in MVT coordinates, and TileBuffer the
// margin kept around it (as pg_tileserv and Martin do).
const (
	TileExtent = 4096
	TileBuffer = 64
)

// renderTileSQL renders tile z/x/y ($1..$3) of a feature table (%s) as
// one MVT layer named $4. Rows are found by the GiST index with the tile's
// envelope in WGS84 (a Web Mercator rectangle is one in degrees too),
// widened by the buffer but not past the world's edges (where it would
// wrap to the other side); each geometry is clipped to that envelope before
// it is projected, so that a feature far larger than the tile costs what
// its part in the tile costs, and no latitude beyond Web Mercator's
// ±85.0511° reaches ST_Transform. Features become MVT features with their
// properties as attributes (jsonb keys) and external_id. An empty tile is
// an empty bytea.
const renderTileSQL = `
WITH env AS (
    SELECT ST_TileEnvelope($1, $2, $3) AS m,
           ST_Transform(ST_ClipByBox2D(ST_TileEnvelope($1, $2, $3, margin => $5::float8 / $6::float8),
                                       ST_TileEnvelope(0, 0, 0)), 4326) AS g
), f AS (
    SELECT ST_AsMVTGeom(ST_Transform(ST_ClipByBox2D(t.geom, env.g), 3857), env.m, $6::int, $5::int, true) AS geom,
           t.properties, t.external_id
    FROM %s t, env
    WHERE t.geom && env.g AND upper_inf(t.validity) AND t.deleted_at IS NULL
)
SELECT coalesce(ST_AsMVT(f, $4::text, $6::int, 'geom'), ''::bytea) FROM f WHERE f.geom IS NOT NULL`

// RenderTile returns the MVT tile z/x/y (XYZ scheme, Web Mercator) of the
// current features of t, as one layer named layer; an empty slice when no
// feature meets the tile.
func (s *Store) RenderTile(ctx context.Context, t FeatureTable, layer string, z, x, y int) ([]byte, error) {
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return nil, err
	}
	var tile []byte
	err := s.db.QueryRow(ctx, fmt.Sprintf(renderTileSQL, t.ident()), z, x, y, layer, TileBuffer, TileExtent).Scan(&tile)
	return tile, wrap(fmt.Sprintf("rendering tile %d/%d/%d of %s", z, x, y, t), err)
}

// RegisteredCollection is one collection of the registry with the content
// version of its feature table, as the tile cache's pruner compares it
// with the cache's folders; a catalog without collections is listed once,
// with an empty CollectionID.
type RegisteredCollection struct {
	Schema, CatalogID, CollectionID string
	// Version is the feature table's content version; "" when it has never
	// been written.
	Version string
}

// registeredCollectionsSQL lists the catalogs of the schemas $1 with their
// collections and each one's current content version (catalogs.schema_name
// is unique and indexed; collections are read by their catalog_id).
const registeredCollectionsSQL = `
SELECT c.schema_name, c.catalog_id, coalesce(k.collection_id, ''), coalesce(o.features_version, '')
FROM catalog.catalogs c
LEFT JOIN catalog.collections k ON k.catalog_id = c.catalog_id
LEFT JOIN catalog.owned_tables o ON o.schema_name = c.schema_name AND o.table_name = k.collection_id
WHERE c.schema_name = ANY($1::text[])`

// RegisteredCollections returns the catalogs registered with the tenant
// schemas named, with their collections and content versions.
func (s *Store) RegisteredCollections(ctx context.Context, schemas []string) ([]RegisteredCollection, error) {
	rows, err := s.db.Query(ctx, registeredCollectionsSQL, schemas)
	if err != nil {
		return nil, wrap("listing the registered collections", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RegisteredCollection, error) {
		var c RegisteredCollection
		err := row.Scan(&c.Schema, &c.CatalogID, &c.CollectionID, &c.Version)
		return c, err
	})
	return out, wrap("listing the registered collections", err)
}
