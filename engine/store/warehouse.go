package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The dwh_join task (catalog/warehouse) joins a collection's features with
// the rows of a warehouse table by a key, as a merge join: both sides are
// read sorted by the key, through cursors, so memory does not grow with
// either. These statements read both sides: the features from wf's
// database, the rows from a PostgreSQL warehouse (a Store on another
// database, made with New on its pool).
//
// The orders agree with Go's: integers numerically, text byte by byte
// (COLLATE "C", which for UTF-8 is code point order, as BigQuery's).

// KeyedFeature is a current feature version with its join key as the
// feature holds it.
type KeyedFeature struct {
	FeatureRow
	// KeyType is the JSON type of properties[key] ("string", "number", …;
	// "" when the property is missing).
	KeyType string
	// Key is properties[key] as text (->>), "" when missing or null.
	Key string
}

// keyedFeaturesSQL reads the current versions of a feature table sorted by
// one property. %[1]s is the table; %[2]s the sort expression (see
// keyOrder). Features whose key cannot be a key of the column's type sort
// first (NULLS FIRST), where the join rejects them.
const keyedFeaturesSQL = `
DECLARE wf_scan NO SCROLL CURSOR FOR
SELECT geoid, external_id, asset_id, ST_AsBinary(geom), properties, stats::jsonb || jsonb_build_object('geometry_hash', geometry_hash, 'attributes_hash', attributes_hash),
       geometry_hash, attributes_hash,
       lower(validity), upper(validity), transaction_time, deleted_at,
       coalesce(jsonb_typeof(properties -> $1), ''), coalesce(properties ->> $1, '')
FROM %[1]s
WHERE upper_inf(validity) AND deleted_at IS NULL
ORDER BY %[2]s NULLS FIRST, external_id`

// integerKeyPattern is what a string property must look like to be an
// integer key: a decimal integer of at most 18 digits (so within int64).
const integerKeyPattern = `^-?(0|[1-9][0-9]{0,17})$`

// keyOrder is the ORDER BY expression of the features' key: numeric for
// integer keys (JSON integers and strings of decimal digits), else the
// key's text in byte order.
func keyOrder(integer bool) string {
	if integer {
		return `CASE WHEN jsonb_typeof(properties -> $1) IN ('number', 'string')
                    AND (properties ->> $1) ~ '` + integerKeyPattern + `'
               THEN (properties ->> $1)::numeric END`
	}
	return `CASE WHEN jsonb_typeof(properties -> $1) IN ('string', 'number') THEN (properties ->> $1) END COLLATE "C"`
}

// ScanFeaturesByKey hands fn the current versions of t sorted by the
// property key (as keyOrder sorts it), batch rows per fetch, in one
// snapshot; integer says the key is compared as an integer. It returns how
// many rows fn accepted.
func (s *Store) ScanFeaturesByKey(ctx context.Context, t FeatureTable, key string, integer bool, batch int, fn func(*KeyedFeature) error) (int64, error) {
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return 0, err
	}
	q := fmt.Sprintf(keyedFeaturesSQL, t.ident(), keyOrder(integer))
	n, err := s.readCursor(ctx, nil, q, batch, func(rows pgx.Rows) error {
		var f KeyedFeature
		if err := rows.Scan(&f.GeoID, &f.ExternalID, &f.AssetID, &f.WKB, &f.Properties, &f.Stats,
			&f.GeometryHash, &f.AttributesHash, &f.ValidFrom, &f.ValidTo, &f.TransactionTime, &f.DeletedAt,
			&f.KeyType, &f.Key); err != nil {
			return err
		}
		utcFeatureTimes(&f.FeatureRow)
		return fn(&f)
	}, key)
	return n, wrap("reading the features of "+t.String()+" by "+key, err)
}

// WarehouseColumn is one column of a warehouse table.
type WarehouseColumn struct {
	Name string
	// Type is PostgreSQL's name of the type (format_type), e.g. "bigint",
	// "character varying(20)".
	Type string
	// Category is pg_type.typcategory: N numeric, S string, D date/time,
	// B boolean, U user-defined, …
	Category string
}

// warehouseColumnsSQL lists a table's columns in order; no rows when the
// table does not exist (or is not visible to the role).
const warehouseColumnsSQL = `
SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typcategory::text
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = to_regclass(format('%I.%I', $1::text, $2::text)) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`

// WarehouseColumns returns the columns of schema.table, none when there is
// no such table.
func (s *Store) WarehouseColumns(ctx context.Context, schema, table string) ([]WarehouseColumn, error) {
	return queryAll(ctx, s.db, "reading the columns of "+schema+"."+table, warehouseColumnsSQL,
		func(row pgx.Row) (WarehouseColumn, error) {
			var c WarehouseColumn
			err := row.Scan(&c.Name, &c.Type, &c.Category)
			return c, err
		}, schema, table)
}

// WarehouseRow is one row of a warehouse table: its key (KeyInt for an
// integer key, else KeyText) and the selected columns as a JSON object.
type WarehouseRow struct {
	KeyInt  int64
	KeyText string
	JSON    []byte
}

// warehouseRowsSQL reads the rows with a key, sorted by it, each with the
// selected columns as one JSON object (row_to_json of a sub-select: no
// limit on the number of columns, every type as PostgreSQL writes it in
// JSON). %[1]s is the key cast (::int8 or ::text), %[2]s the JSON of the
// columns,
// %[3]s the table, %[4]s the key, %[5]s its collation.
const warehouseRowsSQL = `
DECLARE wf_scan NO SCROLL CURSOR FOR
SELECT t.%[4]s%[1]s, %[2]s
FROM %[3]s t
WHERE t.%[4]s IS NOT NULL
ORDER BY t.%[4]s%[1]s%[5]s`

// ScanWarehouseRows hands fn the rows of schema.table whose key is not
// null, sorted by it (integer: as int8, else as text in byte order), with
// the given columns as JSON, batch rows per fetch in one snapshot. The
// names must be columns of the table (WarehouseColumns); they are quoted.
func (s *Store) ScanWarehouseRows(ctx context.Context, schema, table, key string, integer bool, columns []string, batch int, fn func(*WarehouseRow) error) (int64, error) {
	cast, collate := "::text", ` COLLATE "C"`
	if integer {
		cast, collate = "::int8", ""
	}
	cols := make([]string, len(columns))
	for i, c := range columns {
		cols[i] = "t." + pgx.Identifier{c}.Sanitize()
	}
	sel := `'{}'::text`
	if len(cols) > 0 {
		sel = "row_to_json((SELECT r FROM (SELECT " + strings.Join(cols, ", ") + ") r))::text"
	}
	q := fmt.Sprintf(warehouseRowsSQL, cast, sel, pgx.Identifier{schema, table}.Sanitize(), pgx.Identifier{key}.Sanitize(), collate)
	n, err := s.readCursor(ctx, nil, q, batch, func(rows pgx.Rows) error {
		var r WarehouseRow
		var err error
		if integer {
			err = rows.Scan(&r.KeyInt, &r.JSON)
		} else {
			err = rows.Scan(&r.KeyText, &r.JSON)
		}
		if err != nil {
			return err
		}
		return fn(&r)
	})
	return n, wrap("reading the rows of "+schema+"."+table, err)
}
