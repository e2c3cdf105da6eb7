package store

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// FeatureRow is one stored feature version, as export reads it. JSON
// members (Properties, Stats) are PostgreSQL's text of jsonb values.
type FeatureRow struct {
	GeoID      uuid.UUID
	ExternalID string
	AssetID    *string
	// WKB is the geometry as 2D WKB (PostGIS's ST_AsBinary);
	// geom.GeoJSONFromWKB writes its canonical GeoJSON.
	WKB        []byte
	Properties []byte
	// Stats are the stored stats with the content hashes, which the table
	// keeps once, in their columns (rows before migration 030 also kept
	// them in stats: the columns win, with the same values).
	Stats          []byte
	GeometryHash   string
	AttributesHash string
	ValidFrom      time.Time
	// ValidTo is nil for the current version.
	ValidTo         *time.Time
	TransactionTime time.Time
	DeletedAt       *time.Time
}

// FeatureFilter selects the versions ScanFeatures reads.
type FeatureFilter struct {
	// AsOf selects the versions valid at that time; nil selects the current
	// versions. Deleted versions are never selected.
	AsOf *time.Time
	// BBox, when set, keeps the features whose bounding box intersects
	// [min_x, min_y, max_x, max_y] (edges included).
	BBox *[4]float64
	// BatchSize is how many rows one fetch reads; default 1000.
	BatchSize int
}

// ValidityLiteral formats a validity range as the envelope shows it: a
// PostgreSQL range literal with RFC 3339 bounds, "[2024-01-01T00:00:00Z,)"
// for an open range.
func ValidityLiteral(from time.Time, to *time.Time) string {
	var b strings.Builder
	b.WriteByte('[')
	b.WriteString(from.UTC().Format(time.RFC3339Nano))
	b.WriteByte(',')
	if to != nil {
		b.WriteString(to.UTC().Format(time.RFC3339Nano))
	}
	b.WriteByte(')')
	return b.String()
}

// scanFeaturesSQL selects the versions to read, in the primary key's
// order. ScanFeatures reads it through a cursor: one plan and one
// snapshot for the whole scan, fetched a page at a time.
const scanFeaturesSQL = `
DECLARE wf_scan NO SCROLL CURSOR FOR
SELECT geoid, external_id, asset_id, ST_AsBinary(geom), properties, stats::jsonb || jsonb_build_object('geometry_hash', geometry_hash, 'attributes_hash', attributes_hash),
       geometry_hash, attributes_hash,
       lower(validity), upper(validity), transaction_time, deleted_at
FROM %s
WHERE deleted_at IS NULL
  AND CASE WHEN $1::timestamptz IS NULL THEN upper_inf(validity) ELSE validity @> $1::timestamptz END
  AND ($2::float8 IS NULL OR geom && ST_MakeEnvelope($2, $3, $4, $5, 4326))
ORDER BY external_id, transaction_time`

// ScanFeatures reads the versions of t that f selects and hands each to fn
// in (external_id, transaction_time) order. It reads through a cursor,
// f.BatchSize rows per fetch (never the whole table in memory), inside one
// read-only REPEATABLE READ transaction, so the scan sees one consistent
// snapshot. It returns how many rows fn received; an error from fn stops
// the scan and is returned.
func (s *Store) ScanFeatures(ctx context.Context, t FeatureTable, f FeatureFilter, fn func(*FeatureRow) error) (int64, error) {
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return 0, err
	}
	var x0, y0, x1, y1 *float64
	if f.BBox != nil {
		x0, y0, x1, y1 = &f.BBox[0], &f.BBox[1], &f.BBox[2], &f.BBox[3]
	}
	n, err := s.readCursor(ctx, nil, fmt.Sprintf(scanFeaturesSQL, t.ident()), f.BatchSize, func(rows pgx.Rows) error {
		var r FeatureRow
		if err := rows.Scan(&r.GeoID, &r.ExternalID, &r.AssetID, &r.WKB, &r.Properties, &r.Stats,
			&r.GeometryHash, &r.AttributesHash, &r.ValidFrom, &r.ValidTo, &r.TransactionTime, &r.DeletedAt); err != nil {
			return err
		}
		utcFeatureTimes(&r)
		return fn(&r)
	}, f.AsOf, x0, y0, x1, y1)
	return n, wrap("reading features of "+t.String(), err)
}

// readCursor runs declare (a DECLARE wf_scan … CURSOR statement) with
// args and hands every row it yields to fn, fetching batch rows (default
// 1000) at a time, inside one read-only REPEATABLE READ transaction, so
// the whole read sees one snapshot and memory never holds more than a
// page. before, when set, runs first in that transaction (reading what
// must belong to the same snapshot). It returns how many rows fn accepted;
// an error from fn stops the read and is returned. It is the one cursor
// loop of the store: every streaming read goes through it.
func (s *Store) readCursor(ctx context.Context, before func(pgx.Tx) error, declare string, batch int, fn func(pgx.Rows) error, args ...any) (int64, error) {
	fetch := fmt.Sprintf(`FETCH FORWARD %d FROM wf_scan`, cmp.Or(batch, 1000))
	var n int64
	scan := func(tx pgx.Tx) error {
		n = 0
		if before != nil {
			if err := before(tx); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, declare, args...); err != nil {
			return err
		}
		for {
			// Every cursor is named wf_scan, so the same FETCH text
			// returns different columns for different reads: it must be
			// described each time, never served from the connection's
			// statement cache (which would bind the previous read's
			// result formats: "bind message has 13 result formats but
			// query has 14 columns").
			rows, err := tx.Query(ctx, fetch, pgx.QueryExecModeDescribeExec)
			if err != nil {
				return err
			}
			got := 0
			for rows.Next() {
				got++
				if err := fn(rows); err != nil {
					rows.Close()
					return err
				}
				n++
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if got == 0 {
				_, err := tx.Exec(ctx, `CLOSE wf_scan`)
				return err
			}
		}
	}
	if b, ok := s.db.(txBeginner); ok {
		return n, pgx.BeginTxFunc(ctx, b, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, scan)
	}
	// Already inside the caller's transaction: its snapshot is the read's.
	return n, pgx.BeginFunc(ctx, s.db, scan)
}

// txBeginner is a DBTX that can start a transaction with options (a pool
// or a connection, not a transaction).
type txBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// utcFeatureTimes presents a row's times in UTC.
func utcFeatureTimes(r *FeatureRow) {
	r.ValidFrom, r.TransactionTime = r.ValidFrom.UTC(), r.TransactionTime.UTC()
	for _, p := range []**time.Time{&r.ValidTo, &r.DeletedAt} {
		if *p != nil {
			u := (*p).UTC()
			*p = &u
		}
	}
}
