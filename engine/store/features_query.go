package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The reads of OGC API – Features (catalog/ogcapi): a page of a feature
// table's versions selected by time, bbox and filter, in the primary key's
// order, and a collection's summary (count and extents). Geometries are
// rendered by PostGIS from geom (ST_AsGeoJSON), never from a stored copy.

// FeatureKey is the position of a feature version in a feature table's
// order (its primary key): keyset pagination starts after or ends before
// one.
type FeatureKey struct {
	ExternalID      string
	TransactionTime time.Time
}

// FeatureQuery selects a page of feature versions.
type FeatureQuery struct {
	// At selects the versions valid at that time; From and To (either may be
	// nil: open) the versions whose validity meets [From, To]. With none of
	// them, the current versions. Deleted versions are never selected.
	At       *time.Time
	From, To *time.Time
	Interval bool
	// ExternalID, when set, selects that feature only.
	ExternalID string
	// Filter, when set, must hold (bbox and CQL2 filters).
	Filter FeatureExpr
	// After starts the page after that key; Before ends it before that key
	// (the previous page). At most one is set.
	After, Before *FeatureKey
	// Limit is the page size; the read fetches one row more, to tell
	// whether a page lies beyond (FeaturePage).
	Limit int
	// SRID is the CRS geometries are answered in (EPSG code; 0 or 4326:
	// WGS84 as stored). FlipAxes swaps x and y (EPSG:4326 is latitude
	// first).
	SRID     int
	FlipAxes bool
	// Properties, when not nil, keeps those properties only.
	Properties []string
}

// FeatureOut is one feature version as a query answers it: GeoJSON
// geometry and properties as JSON text.
type FeatureOut struct {
	Key        FeatureKey
	ValidFrom  time.Time
	ValidTo    *time.Time
	Geometry   []byte
	Properties []byte
}

// FeaturePage says what lies around the page a query read.
type FeaturePage struct {
	// Returned is how many features were handed over.
	Returned int
	// First and Last are the keys of the first and last feature handed
	// over.
	First, Last *FeatureKey
	// More says a page lies beyond the one read in its direction: after
	// it for a forward read, before it for a Before read.
	More bool
}

// maxFeaturePage bounds FeatureQuery.Limit.
const maxFeaturePage = 10000

// QueryFeatures reads the page of t's versions that q selects, in
// (external_id, transaction_time) order, and hands each to fn as it
// arrives from the database (memory holds one row, never the page). An
// error from fn stops the read and is returned. A table that does not
// exist reads as empty.
func (s *Store) QueryFeatures(ctx context.Context, t FeatureTable, q FeatureQuery, fn func(*FeatureOut) error) (FeaturePage, error) {
	var page FeaturePage
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return page, err
	}
	if q.Limit < 1 || q.Limit > maxFeaturePage {
		return page, fmt.Errorf("error reading features of %s: limit %d is not 1 to %d", t, q.Limit, maxFeaturePage)
	}
	sql, args, err := featureQuerySQL(t, q)
	if err != nil {
		return page, fmt.Errorf("error reading features of %s: %w", t, err)
	}
	rows, err := s.db.Query(ctx, sql, args...)
	if isUndefinedTable(err) {
		return page, nil
	}
	if err != nil {
		return page, featureQueryErr(t, err)
	}
	defer rows.Close()
	first := true
	for rows.Next() {
		var f FeatureOut
		var rn int
		if err := rows.Scan(&f.Key.ExternalID, &f.Key.TransactionTime, &f.ValidFrom, &f.ValidTo, &f.Geometry, &f.Properties, &rn); err != nil {
			return page, featureQueryErr(t, err)
		}
		if first && q.Before != nil && rn > q.Limit {
			page.More, first = true, false // the row before the page
			continue
		}
		first = false
		if q.Before == nil && page.Returned == q.Limit {
			page.More = true // the row after the page
			break
		}
		f.Key.TransactionTime, f.ValidFrom = f.Key.TransactionTime.UTC(), f.ValidFrom.UTC()
		if f.ValidTo != nil {
			u := f.ValidTo.UTC()
			f.ValidTo = &u
		}
		if err := fn(&f); err != nil {
			return page, err
		}
		k := f.Key
		if page.First == nil {
			page.First = &k
		}
		page.Last = &k
		page.Returned++
	}
	rows.Close()
	if err := rows.Err(); err != nil && !isUndefinedTable(err) {
		return page, featureQueryErr(t, err)
	}
	return page, nil
}

// ErrInvalidFeatureQuery is wrapped when PostgreSQL refuses a query's
// values (a geometry PostGIS cannot read, a CRS it does not know): the
// caller's input, not the server, is wrong.
var ErrInvalidFeatureQuery = errors.New("invalid feature query")

// featureQueryErr words an error of QueryFeatures: a table that does not
// exist is not one (callers check the registry first), refused input is
// ErrInvalidFeatureQuery.
func featureQueryErr(t FeatureTable, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "XX000" || pgErr.Code == "22023" || strings.HasPrefix(pgErr.Code, "22"):
			// PostGIS raises XX000 for a geometry it cannot parse or a
			// transform it cannot do; 22xxx are data exceptions.
			return fmt.Errorf("%w: %s", ErrInvalidFeatureQuery, pgErr.Message)
		}
	}
	return wrap("reading features of "+t.String(), err)
}

// featureQuerySQL builds the statement of q: fixed text chosen by which
// parts q has, every value a parameter. Its shape, for a forward page:
//
//	SELECT external_id, transaction_time, lower(validity), upper(validity),
//	       ST_AsGeoJSON(geom, 15), properties, 0
//	FROM "<schema>"."<collection>"
//	WHERE deleted_at IS NULL AND upper_inf(validity)
//	  AND <filter>
//	  AND (external_id, transaction_time) > ($1, $2)
//	ORDER BY external_id, transaction_time
//	LIMIT $3 + 1
//
// It walks the primary key's index in order and stops after a page (no
// OFFSET: every page costs what the first does). A Before page reads the
// index backwards and is put back in order around a row number, so the
// row before the page (rn = limit + 1) comes first.
func featureQuerySQL(t FeatureTable, q FeatureQuery) (string, []any, error) {
	var a sqlArgs
	geom := "geom"
	if q.SRID != 0 && q.SRID != 4326 {
		geom = "ST_Transform(geom, " + a.add(q.SRID) + "::int)"
	}
	if q.FlipAxes {
		geom = "ST_FlipCoordinates(" + geom + ")"
	}
	props := "properties"
	if q.Properties != nil {
		props = "(SELECT coalesce(jsonb_object_agg(key, value), '{}'::jsonb) FROM jsonb_each(properties) WHERE key = ANY(" +
			a.add(q.Properties) + "::text[]))"
	}
	where := []string{"deleted_at IS NULL"}
	switch {
	case q.At != nil:
		where = append(where, "validity @> "+a.add(*q.At)+"::timestamptz")
	case q.Interval:
		where = append(where, "validity && tstzrange("+a.add(q.From)+"::timestamptz, "+a.add(q.To)+"::timestamptz, '[]')")
	default:
		where = append(where, "upper_inf(validity)")
	}
	if q.ExternalID != "" {
		where = append(where, "external_id = "+a.add(q.ExternalID)+"::text")
	}
	if q.Filter != nil {
		f, err := q.Filter.sql(&a)
		if err != nil {
			return "", nil, err
		}
		where = append(where, f)
	}
	order := "external_id, transaction_time"
	switch {
	case q.After != nil:
		where = append(where, "(external_id, transaction_time) > ("+a.add(q.After.ExternalID)+"::text, "+a.add(q.After.TransactionTime)+"::timestamptz)")
	case q.Before != nil:
		where = append(where, "(external_id, transaction_time) < ("+a.add(q.Before.ExternalID)+"::text, "+a.add(q.Before.TransactionTime)+"::timestamptz)")
		order = "external_id DESC, transaction_time DESC"
	}
	limit := a.add(q.Limit + 1)
	rn := "0"
	if q.Before != nil {
		rn = "row_number() OVER (ORDER BY " + order + ")"
	}
	inner := "SELECT external_id, transaction_time, lower(validity) AS valid_from, upper(validity) AS valid_to,\n" +
		"       ST_AsGeoJSON(" + geom + ", 15) AS geometry, " + props + "::text AS properties,\n" +
		"       " + rn + " AS rn\n" +
		"FROM " + t.ident() + "\nWHERE " + strings.Join(where, "\n  AND ") + "\nORDER BY " + order + "\nLIMIT " + limit + "::int"
	if q.Before == nil {
		return inner, a.values, nil
	}
	return "SELECT * FROM (" + inner + ") page ORDER BY external_id, transaction_time", a.values, nil
}

// FeatureSummary is what a collection's description shows of its
// features.
type FeatureSummary struct {
	// Count is the number of current features; -1 when the summary is
	// estimated (Estimated).
	Count int64
	// Estimated says the table was too large to read whole: BBox is
	// PostGIS's estimate from the planner's statistics (nil before the
	// table is analysed), Count and the validity bounds are unknown.
	Estimated bool
	// BBox is [west, south, east, north] of the current features; nil
	// when there are none.
	BBox []float64
	// First is the earliest start of validity of any version; Last the
	// latest end, nil while a version is current (open-ended). First is
	// nil for an empty table.
	First, Last *time.Time
}

// featureSummarySQL reads a feature table's summary in one pass: count and
// extent of the current versions, validity bounds of all.
const featureSummarySQL = `
SELECT n, ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e), first, CASE WHEN open THEN NULL ELSE last END
FROM (SELECT count(*) FILTER (WHERE upper_inf(validity)) AS n,
             ST_Extent(geom) FILTER (WHERE upper_inf(validity)) AS e,
             min(lower(validity)) AS first, max(upper(validity)) AS last,
             coalesce(bool_or(upper_inf(validity)), false) AS open
      FROM %s WHERE deleted_at IS NULL) s`

// estimatedSummarySQL reads a large table's summary from the planner's
// statistics alone: the rows it counts ($1 a regclass) and PostGIS's
// estimated extent of geom.
const estimatedSummarySQL = `
SELECT c.reltuples::float8,
       CASE WHEN c.reltuples > $2 THEN (SELECT ARRAY[ST_XMin(x), ST_YMin(x), ST_XMax(x), ST_YMax(x)]
                                        FROM (SELECT ST_EstimatedExtent($3, $4, 'geom') AS x) e) END
FROM pg_class c WHERE c.oid = to_regclass($1)`

// SummarizeFeatures returns t's summary, read whole (featureSummarySQL)
// while the planner counts at most exactRows rows in t, else estimated
// (estimatedSummarySQL): a collection's description stays cheap however
// large it grows. A table that does not exist (a collection never
// written) is empty.
func (s *Store) SummarizeFeatures(ctx context.Context, t FeatureTable, exactRows int64) (FeatureSummary, error) {
	var sum FeatureSummary
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return sum, err
	}
	var rows *float64
	var est []*float64
	err := s.db.QueryRow(ctx, estimatedSummarySQL, t.ident(), float64(exactRows), t.Schema, t.Collection).Scan(&rows, &est)
	if errors.Is(err, pgx.ErrNoRows) {
		return FeatureSummary{}, nil // no such table
	}
	if err != nil {
		return sum, wrap("estimating the features of "+t.String(), err)
	}
	if rows != nil && *rows > float64(exactRows) {
		sum = FeatureSummary{Count: -1, Estimated: true}
		if len(est) == 4 && est[0] != nil && est[1] != nil && est[2] != nil && est[3] != nil {
			sum.BBox = []float64{*est[0], *est[1], *est[2], *est[3]}
		}
		return sum, nil
	}
	var w, south, e, n *float64
	err = s.db.QueryRow(ctx, fmt.Sprintf(featureSummarySQL, t.ident())).Scan(&sum.Count, &w, &south, &e, &n, &sum.First, &sum.Last)
	if isUndefinedTable(err) {
		return FeatureSummary{}, nil
	}
	if err != nil {
		return sum, wrap("summarising the features of "+t.String(), err)
	}
	if w != nil {
		sum.BBox = []float64{*w, *south, *e, *n}
	}
	for _, p := range []**time.Time{&sum.First, &sum.Last} {
		if *p != nil {
			u := (*p).UTC()
			*p = &u
		}
	}
	return sum, nil
}

// KnownSRID reports whether PostGIS knows the EPSG code srid (a row of
// spatial_ref_sys), so geometries can be transformed to and from it.
func (s *Store) KnownSRID(ctx context.Context, srid int) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM spatial_ref_sys WHERE auth_name = 'EPSG' AND auth_srid = $1)`, srid).Scan(&ok)
	return ok, wrap(fmt.Sprintf("looking up EPSG:%d", srid), err)
}

// isUndefinedTable reports whether err is PostgreSQL's undefined_table.
func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}

// sourceSRIDsSQL reads the EPSG codes of the CRSs a collection's sources
// were in: what the gdal task recorded in their assets' metadata
// (metadata.gdal.crs.epsg), for the assets not deleted.
const sourceSRIDsSQL = `
SELECT DISTINCT (metadata #>> '{gdal,crs,epsg}')::int
FROM catalog.assets
WHERE catalog_id = $1 AND collection_id = $2 AND status <> 'deleted'
  AND metadata #>> '{gdal,crs,epsg}' ~ '^[0-9]{1,9}$'
ORDER BY 1`

// SourceSRIDs returns the EPSG codes of the CRSs a collection's sources
// were in (sourceSRIDsSQL), in order.
func (s *Store) SourceSRIDs(ctx context.Context, catalogID, collectionID string) ([]int, error) {
	rows, err := s.db.Query(ctx, sourceSRIDsSQL, catalogID, collectionID)
	if err != nil {
		return nil, wrap("reading the CRSs of the sources of "+catalogID+"/"+collectionID, err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			return nil, wrap("reading the CRSs of the sources of "+catalogID+"/"+collectionID, err)
		}
		out = append(out, n)
	}
	return out, wrap("reading the CRSs of the sources of "+catalogID+"/"+collectionID, rows.Err())
}
