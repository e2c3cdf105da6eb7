package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// FeatureVersion is one feature version to merge into a feature table: what
// the ingestion computed from one source record.
type FeatureVersion struct {
	// GeoID is the id the feature gets if it is new (a UUIDv7); an existing
	// feature keeps its own.
	GeoID      uuid.UUID
	ExternalID string
	AssetID    *string
	// WKB is the canonical geometry as 2D WKB in WGS84 longitude/latitude,
	// stored as the PostGIS geometry (its only copy: readers write GeoJSON
	// from it).
	WKB        []byte
	Properties []byte // a JSON object
	Stats      []byte // a JSON object
	// GeometryHash and AttributesHash decide whether a version changed.
	GeometryHash   string
	AttributesHash string
	// ValidFrom starts the version's validity.
	ValidFrom time.Time
	// copyRow is the row encoded for COPY (EncodeCopyRow), or nil.
	copyRow []byte
}

// MergeAction is what merging did with one FeatureVersion.
type MergeAction string

// Merge actions.
const (
	// MergeCreated: the external id had no current version; one was inserted.
	MergeCreated MergeAction = "created"
	// MergeVersioned: the content changed; the current version's validity
	// was closed at ValidFrom and a new version inserted.
	MergeVersioned MergeAction = "versioned"
	// MergeUnchanged: the current version has the same hashes; nothing was written.
	MergeUnchanged MergeAction = "unchanged"
	// MergeConflict: the content changed but ValidFrom is not after the
	// current version's start; nothing was written.
	MergeConflict MergeAction = "conflict"
	// MergeInvalid: PostGIS found the geometry invalid (MergeOutcome.Reason
	// says why); nothing was written.
	MergeInvalid MergeAction = "invalid"
)

// MergeOutcome is the result of one FeatureVersion, in the order given.
type MergeOutcome struct {
	Action MergeAction
	// GeoID is the feature's id (its existing one unless Created).
	GeoID uuid.UUID
	// ValidFrom and TransactionTime describe the version that is current
	// after the merge: the new one, or the existing one (Unchanged, Conflict).
	ValidFrom       time.Time
	TransactionTime time.Time
	// Reason is PostGIS's ST_IsValidReason for MergeInvalid.
	Reason string
}

// lookupCurrentSQL reads the current versions of a batch's external ids:
// one probe of the "current" index each.
const lookupCurrentSQL = `
SELECT t.external_id, t.geoid, t.geometry_hash, t.attributes_hash, lower(t.validity), t.transaction_time
FROM %s t
WHERE t.external_id = ANY($1::text[]) AND upper_inf(t.validity) AND t.deleted_at IS NULL`

// closeVersionsSQL ends the validity of the versions being replaced: each
// (external_id, transaction_time) gets the upper bound given with it.
const closeVersionsSQL = `
UPDATE %s t
SET validity = tstzrange(lower(t.validity), c.valid_to, '[)')
FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS c(external_id, transaction_time, valid_to)
WHERE t.external_id = c.external_id AND t.transaction_time = c.transaction_time`

// featureColumns are the columns MergeFeatures COPYs, in order.
var featureColumns = []string{
	"geoid", "external_id", "asset_id", "geom", "properties", "stats",
	"geometry_hash", "attributes_hash", "validity", "transaction_time",
}

// current is the current version of one external id.
type current struct {
	geoid                        uuid.UUID
	geometryHash, attributesHash string
	validFrom, transactionTime   time.Time
}

// MergeFeatures writes one batch of feature versions into t, in one
// transaction: under the table's advisory lock (so concurrent ingestions of
// one collection serialise batch by batch) it asks PostGIS whether every
// geometry is valid and reads the current version of every external id of
// the batch, in one round trip, then decides each version's MergeAction
// (invalid geometry: invalid, with PostGIS's reason; same hashes: unchanged; changed content starting after the current version:
// versioned; starting at or before it: conflict; no current version:
// created), closes the replaced versions and COPYs the new ones straight
// into the table. The external ids of one batch must be distinct. The
// outcomes are in the order of versions; the transaction time is that of
// every version written. It is read once the advisory lock is held
// (clock_timestamp, not the transaction's start), so the merges of one
// table commit in transaction-time order: a reader that has seen a
// transaction time has seen every version written before it, which the
// search index's watermark relies on (ScanFeatureChanges).
func (s *Store) MergeFeatures(ctx context.Context, t FeatureTable, versions []FeatureVersion) ([]MergeOutcome, time.Time, error) {
	if len(versions) == 0 {
		return nil, time.Time{}, nil
	}
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return nil, time.Time{}, err
	}
	var out []MergeOutcome
	var txTime time.Time
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		out, txTime, err = mergeTx(ctx, tx, t, versions, nil, true, nil)
		return err
	})
	if err != nil {
		return nil, time.Time{}, wrap("merging features into "+t.String(), err)
	}
	return out, txTime.UTC(), nil
}

// mergeTx is MergeFeatures inside tx. checked, when not nil, holds
// PostGIS's verdict on each version's geometry (CheckGeometries), which is
// then not asked again. bump says whether writing rows records a new
// version of t's content (bumpFeaturesVersion); a FeatureLoad does that
// once for all its batches. The outcomes' times are in UTC.
//
// written, when not nil, holds every external id that t can have a current
// version of (the ids a load into an empty table wrote so far): only those
// are looked up, and the ids this batch writes are added to it.
func mergeTx(ctx context.Context, tx pgx.Tx, t FeatureTable, versions []FeatureVersion, checked []string, bump bool, written *idFilter) ([]MergeOutcome, time.Time, error) {
	if checked != nil && len(checked) != len(versions) {
		return nil, time.Time{}, fmt.Errorf("%d geometry verdicts for %d versions", len(checked), len(versions))
	}
	ids := make([]string, 0, len(versions))
	for i := range versions {
		if written == nil || written.mayHold(versions[i].ExternalID) {
			ids = append(ids, versions[i].ExternalID)
		}
	}
	reasons := checked
	out := make([]MergeOutcome, len(versions))
	var txTime time.Time
	err := func() error {
		cur := make(map[string]current, len(versions))
		b := &pgx.Batch{}
		b.Queue(`SELECT clock_timestamp() FROM pg_advisory_xact_lock($1)`, t.lockKey()).QueryRow(func(row pgx.Row) error {
			return row.Scan(&txTime)
		})
		if checked == nil {
			reasons = make([]string, 0, len(versions))
			b.Queue(checkGeometriesSQL, versionWKBs(versions)).Query(func(rows pgx.Rows) error {
				var err error
				reasons, err = scanReasons(rows, reasons)
				return err
			})
		}
		if len(ids) > 0 {
			b.Queue(fmt.Sprintf(lookupCurrentSQL, t.ident()), ids).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var id string
					var c current
					if err := rows.Scan(&id, &c.geoid, &c.geometryHash, &c.attributesHash, &c.validFrom, &c.transactionTime); err != nil {
						return err
					}
					cur[id] = c
				}
				return rows.Err()
			})
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("checking geometries and looking up current versions: %w", err)
		}
		if len(reasons) != len(versions) {
			return fmt.Errorf("PostGIS checked %d geometries of %d", len(reasons), len(versions))
		}
		var closeIDs []string
		var closeTT, closeTo []time.Time
		var write []int
		for i := range versions {
			v := &versions[i]
			c, ok := cur[v.ExternalID]
			switch {
			case reasons[i] != "":
				out[i] = MergeOutcome{Action: MergeInvalid, Reason: reasons[i]}
			case !ok:
				out[i] = MergeOutcome{Action: MergeCreated, GeoID: v.GeoID, ValidFrom: v.ValidFrom, TransactionTime: txTime}
				write = append(write, i)
			case c.geometryHash == v.GeometryHash && c.attributesHash == v.AttributesHash:
				out[i] = MergeOutcome{Action: MergeUnchanged, GeoID: c.geoid, ValidFrom: c.validFrom, TransactionTime: c.transactionTime}
			case !v.ValidFrom.After(c.validFrom):
				out[i] = MergeOutcome{Action: MergeConflict, GeoID: c.geoid, ValidFrom: c.validFrom, TransactionTime: c.transactionTime}
			default:
				out[i] = MergeOutcome{Action: MergeVersioned, GeoID: c.geoid, ValidFrom: v.ValidFrom, TransactionTime: txTime}
				closeIDs, closeTT, closeTo = append(closeIDs, v.ExternalID), append(closeTT, c.transactionTime), append(closeTo, v.ValidFrom)
				write = append(write, i)
			}
		}
		if len(closeIDs) > 0 {
			if _, err := tx.Exec(ctx, fmt.Sprintf(closeVersionsSQL, t.ident()), closeIDs, closeTT, closeTo); err != nil {
				return fmt.Errorf("closing replaced versions: %w", err)
			}
		}
		if len(write) > 0 {
			if allEncoded(versions, write) {
				if err := copyEncoded(ctx, tx, t, versions, out, write, txTime); err != nil {
					return fmt.Errorf("copying new versions: %w", err)
				}
			} else {
				src := &versionSource{versions: versions, out: out, write: write, txTime: txTime, i: -1}
				if _, err := tx.CopyFrom(ctx, pgx.Identifier{t.Schema, t.Collection}, featureColumns, src); err != nil {
					return fmt.Errorf("copying new versions: %w", err)
				}
			}
			if bump {
				if err := bumpFeaturesVersion(ctx, tx, t); err != nil {
					return err
				}
			}
			if written != nil {
				for _, k := range write {
					written.add(versions[k].ExternalID)
				}
			}
		}
		return nil
	}()
	if err != nil {
		return nil, time.Time{}, err
	}
	for i := range out {
		out[i].ValidFrom = out[i].ValidFrom.UTC()
		out[i].TransactionTime = out[i].TransactionTime.UTC()
	}
	return out, txTime.UTC(), nil
}

// versionSource feeds the versions to write to CopyFrom, in the binary
// types of their columns.
type versionSource struct {
	versions []FeatureVersion
	out      []MergeOutcome
	write    []int
	txTime   time.Time
	i        int
}

// Next implements pgx.CopyFromSource.
func (v *versionSource) Next() bool { v.i++; return v.i < len(v.write) }

// Values implements pgx.CopyFromSource.
func (v *versionSource) Values() ([]any, error) {
	k := v.write[v.i]
	f := &v.versions[k]
	ewkb, err := ewkb4326(f.WKB)
	if err != nil {
		return nil, fmt.Errorf("external id %q: %w", f.ExternalID, err)
	}
	return []any{
		pgtype.UUID{Bytes: v.out[k].GeoID, Valid: true}, f.ExternalID, f.AssetID, ewkb,
		f.Properties, f.Stats, f.GeometryHash, f.AttributesHash,
		pgtype.Range[pgtype.Timestamptz]{
			Lower: pgtype.Timestamptz{Time: f.ValidFrom, Valid: true}, LowerType: pgtype.Inclusive,
			UpperType: pgtype.Unbounded, Valid: true,
		},
		v.txTime,
	}, nil
}

// Err implements pgx.CopyFromSource.
func (v *versionSource) Err() error { return nil }

// BeginBulkLoad prepares t for a load: when t holds no row at all (a new
// or emptied collection), it drops the indexes that a load is cheaper to
// build after its rows are in (GiST on geom, geoid) and returns true; the
// caller must then call EndBulkLoad when the load ends, whatever its
// outcome. A table with rows is left as it is (false). The versioning
// indexes (primary key, current version) stay, so merges work unchanged;
// readers meanwhile see a collection still being filled, without its
// spatial index. Should EndBulkLoad never run (a crash), the next
// CreateFeatureTable (every ingestion, tiles and export task calls it)
// builds the indexes again.
func (s *Store) BeginBulkLoad(ctx context.Context, t FeatureTable) (bool, error) {
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return false, err
	}
	var empty bool
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, t.lockKey()); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM `+t.ident()+`)`).Scan(&empty); err != nil {
			return err
		}
		if !empty {
			return nil
		}
		_, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+t.schemaObject("geom")+`, `+t.schemaObject("geoid"))
		return err
	})
	return empty && err == nil, wrap("preparing a bulk load into "+t.String(), err)
}

// EndBulkLoad builds the indexes BeginBulkLoad dropped (nothing when they
// exist), under the table's advisory lock: merges of other loads wait for
// the build, not the other way round.
func (s *Store) EndBulkLoad(ctx context.Context, t FeatureTable) error {
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, t.lockKey()); err != nil {
			return err
		}
		for _, stmt := range afterLoadIndexesSQL(t) {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("building the indexes of "+t.String(), err)
}
