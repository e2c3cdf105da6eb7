package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Search indexes (catalog/search): catalog.search_indexes records, per
// index, the watermark of the last run, so that the next one sends only
// what changed since.

// FeatureChange is the latest version of one feature among those written
// since a watermark: the version to index when Current, else the feature
// has no current version any more and its document is to be deleted.
type FeatureChange struct {
	FeatureRow
	// Current is true when the version is the feature's current one (open
	// validity, not deleted).
	Current bool
}

// scanFeatureChangesSQL selects, per feature (geoid), the latest version
// written or deleted after $1; with $1 NULL (a full run) the current
// versions only. DISTINCT ON keeps the latest of a feature's changed
// versions: the new current one, or the closed one when nothing replaced
// it. A full run reads (and sorts) the whole table; an incremental one
// reads it too, since the table has no index on transaction_time, but
// sends only the changed features.
const scanFeatureChangesSQL = `
DECLARE wf_scan NO SCROLL CURSOR FOR
SELECT DISTINCT ON (geoid)
       geoid, external_id, asset_id, ST_AsBinary(geom), properties, stats::jsonb || jsonb_build_object('geometry_hash', geometry_hash, 'attributes_hash', attributes_hash),
       geometry_hash, attributes_hash,
       lower(validity), upper(validity), transaction_time, deleted_at,
       upper_inf(validity) AND deleted_at IS NULL
FROM %s
WHERE CASE WHEN $1::timestamptz IS NULL THEN upper_inf(validity) AND deleted_at IS NULL
           ELSE transaction_time > $1 OR deleted_at > $1 END
ORDER BY geoid, transaction_time DESC`

// featureWatermarkSQL reads the latest write of a feature table: its last
// transaction_time or deleted_at. MergeFeatures takes transaction_time
// under the table's advisory lock, so writes to a table commit in that
// order and a snapshot that sees a time sees everything before it.
const featureWatermarkSQL = `SELECT greatest(max(transaction_time), max(deleted_at)) FROM %s`

// ScanFeatureChanges hands fn, for every feature of t written or deleted
// after since (every current feature when since is nil), its latest such
// version, batch rows per fetch, in one snapshot. It returns how many
// changes fn accepted and the table's watermark in that snapshot (the
// since of the next run; since itself when nothing was ever written after
// it, or nil for an empty table).
func (s *Store) ScanFeatureChanges(ctx context.Context, t FeatureTable, since *time.Time, batch int, fn func(*FeatureChange) error) (int64, *time.Time, error) {
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return 0, nil, err
	}
	watermark := since
	before := func(tx pgx.Tx) error {
		var w *time.Time
		if err := tx.QueryRow(ctx, fmt.Sprintf(featureWatermarkSQL, t.ident())).Scan(&w); err != nil {
			return err
		}
		if w != nil && (watermark == nil || w.After(*watermark)) {
			u := w.UTC()
			watermark = &u
		}
		return nil
	}
	n, err := s.readCursor(ctx, before, fmt.Sprintf(scanFeatureChangesSQL, t.ident()), batch, func(rows pgx.Rows) error {
		var c FeatureChange
		if err := rows.Scan(&c.GeoID, &c.ExternalID, &c.AssetID, &c.WKB, &c.Properties, &c.Stats,
			&c.GeometryHash, &c.AttributesHash, &c.ValidFrom, &c.ValidTo, &c.TransactionTime, &c.DeletedAt, &c.Current); err != nil {
			return err
		}
		utcFeatureTimes(&c.FeatureRow)
		return fn(&c)
	}, since)
	return n, watermark, wrap("reading the changed features of "+t.String(), err)
}

// SearchIndex is one row of catalog.search_indexes.
type SearchIndex struct {
	Name         string
	CatalogID    string
	CollectionID string
	SchemaName   string
	// Watermark is the latest feature write indexed; nil before the first.
	Watermark *time.Time
	// Documents is the index's document count after the last run.
	Documents int64
	UpdatedAt time.Time
}

// getSearchIndexSQL reads one index's state.
const getSearchIndexSQL = `
SELECT index_name, catalog_id, collection_id, schema_name, watermark, documents, updated_at
FROM catalog.search_indexes WHERE index_name = $1`

// GetSearchIndex returns the recorded state of an index; found is false
// when none is recorded.
func (s *Store) GetSearchIndex(ctx context.Context, name string) (idx SearchIndex, found bool, err error) {
	err = s.db.QueryRow(ctx, getSearchIndexSQL, name).Scan(&idx.Name, &idx.CatalogID, &idx.CollectionID,
		&idx.SchemaName, &idx.Watermark, &idx.Documents, &idx.UpdatedAt)
	if err == pgx.ErrNoRows {
		return SearchIndex{}, false, nil
	}
	if err != nil {
		return SearchIndex{}, false, wrap("reading search index "+name, err)
	}
	if idx.Watermark != nil {
		u := idx.Watermark.UTC()
		idx.Watermark = &u
	}
	return idx, true, nil
}

// putSearchIndexSQL records an index's state after a run. A watermark
// never moves back: two runs that overlap keep the later one's.
const putSearchIndexSQL = `
INSERT INTO catalog.search_indexes (index_name, catalog_id, collection_id, schema_name, watermark, documents)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (index_name) DO UPDATE
SET watermark = greatest(catalog.search_indexes.watermark, EXCLUDED.watermark),
    documents = EXCLUDED.documents, updated_at = now(),
    catalog_id = EXCLUDED.catalog_id, collection_id = EXCLUDED.collection_id, schema_name = EXCLUDED.schema_name`

// PutSearchIndex records an index's state after a successful run.
func (s *Store) PutSearchIndex(ctx context.Context, idx SearchIndex) error {
	_, err := s.db.Exec(ctx, putSearchIndexSQL, idx.Name, idx.CatalogID, idx.CollectionID, idx.SchemaName, idx.Watermark, idx.Documents)
	return wrap("recording search index "+idx.Name, err)
}

// deleteSearchIndexSQL forgets an index, so that the next run (after the
// collection is registered again) starts with a full one.
const deleteSearchIndexSQL = `DELETE FROM catalog.search_indexes WHERE index_name = $1`

// DeleteSearchIndex forgets an index's state; forgetting one that is not
// recorded is no error.
func (s *Store) DeleteSearchIndex(ctx context.Context, name string) error {
	_, err := s.db.Exec(ctx, deleteSearchIndexSQL, name)
	return wrap("forgetting search index "+name, err)
}
