package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// Feature tables: one table per collection, in its catalog's tenant schema
// (catalog.catalogs.schema_name), named after the collection id. A row is one
// version of one feature; the versions of a feature share its geoid and
// external_id and have disjoint validity ranges, the open-ended one being
// the current version.
//
//	CREATE TABLE "<schema>"."<collection>" (
//	    geoid            uuid        NOT NULL,  -- UUIDv7, the feature's identity, shared by its versions
//	    external_id      text        NOT NULL,  -- the feature's id in the source data
//	    asset_id         text,
//	    geom             geometry(Geometry, 4326) NOT NULL,  -- the canonical geometry (RFC 7946 winding), in PostGIS
//	    properties       jsonb       NOT NULL,
//	    stats            json        NOT NULL,  -- the envelope's stats but the content hashes (kept once, below)
//	    geometry_hash    text        NOT NULL,  -- hex sha256 of the canonical WKB
//	    attributes_hash  text        NOT NULL,  -- hex sha256 of the canonical properties JSON
//	    validity         tstzrange   NOT NULL,  -- valid time, [start, end); end open for the current version
//	    transaction_time timestamptz NOT NULL,  -- when this version was written
//	    deleted_at       timestamptz,
//	    PRIMARY KEY (external_id, transaction_time)
//	);
//	-- one current version per external id: what re-ingestion looks up and locks
//	CREATE UNIQUE INDEX ON … (external_id) WHERE upper_inf(validity) AND deleted_at IS NULL;
//	CREATE INDEX ON … (geoid);
//	CREATE INDEX ON … USING gist (geom);
//
// geom is what QGIS, GeoServer, pg_tileserv and ogr2ogr read; its GiST index
// serves bbox filters and tiles. It is the only copy of the geometry: the
// readers take its WKB (ST_AsBinary) and the catalog writes the canonical
// GeoJSON from it (geom.GeoJSONFromWKB), the same text that was stored in a
// jsonb "geometry" column beside it until migration 030 dropped that copy.
// Tables made before PostGIS (a WKB bytea and a planar box, which PostGIS
// makes redundant) are upgraded in place by CreateFeatureTable. The
// versioning columns and indexes stay as they were.
//
// stats is json, not jsonb: it is only ever read back whole, and json
// stores the text as given where jsonb parses it into a tree (a fifth of the
// server's CPU per row of a load, measured). Tables made before migration
// 030 keep a jsonb stats column, which reads back the same.
//
// A load into an empty table builds its GiST and geoid indexes after the
// rows are in (BeginBulkLoad, EndBulkLoad): one build costs a tenth of the
// row-by-row upkeep.
//
// Index and constraint names are "_<collection>_<suffix>": they start with
// "_", which no collection id (so no table name) does, and no two of them
// are equal because no suffix ends with "_" plus another.

// FeatureTable names the feature table of one collection: its tenant
// schema and its collection id. Build it with NewFeatureTable, which
// validates both, so that its identifiers are safe to quote into SQL.
type FeatureTable struct {
	Schema     string
	Collection string
}

// The rules of a tenant schema and a collection id, each at most
// maxIdentifier bytes (checked apart: a counted repetition such as {0,62}
// compiles to a program ~60 times larger, kept by every wf process).
var (
	featureSchemaRE     = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	featureCollectionRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
)

// maxIdentifier is the longest PostgreSQL identifier.
const maxIdentifier = 63

// reservedFeatureSchemas are schemas that are never a tenant's, whatever a
// caller says: wf's own, PostgreSQL's, and the platform's "system".
var reservedFeatureSchemas = map[string]bool{
	"system": true, "public": true, "catalog": true, "tasks": true, "information_schema": true,
}

// ErrInvalidFeatureTable is wrapped by NewFeatureTable's and
// DropTenantSchema's refusals of a name.
var ErrInvalidFeatureTable = errors.New("invalid feature table name")

// checkTenantSchema refuses a schema name that is malformed or reserved.
func checkTenantSchema(schema string) error {
	switch {
	case len(schema) > maxIdentifier || !featureSchemaRE.MatchString(schema):
		return fmt.Errorf("%w: schema %q must be 1 to 63 lower-case letters, digits or '_', not starting with a digit", ErrInvalidFeatureTable, schema)
	case reservedFeatureSchemas[schema] || strings.HasPrefix(schema, "pg_"):
		return fmt.Errorf("%w: schema %q is reserved, not a tenant schema", ErrInvalidFeatureTable, schema)
	}
	return nil
}

// NewFeatureTable validates a tenant schema and a collection id (the rules
// of catalog.catalogs and catalog.collections) and returns their table.
func NewFeatureTable(schema, collection string) (FeatureTable, error) {
	if err := checkTenantSchema(schema); err != nil {
		return FeatureTable{}, err
	}
	if len(collection) > maxIdentifier || !featureCollectionRE.MatchString(collection) {
		return FeatureTable{}, fmt.Errorf("%w: collection %q must be 1 to 63 lower-case letters, digits, '_' or '-', starting with a letter or digit", ErrInvalidFeatureTable, collection)
	}
	return FeatureTable{Schema: schema, Collection: collection}, nil
}

// String returns schema.collection, for messages and outputs.
func (t FeatureTable) String() string { return t.Schema + "." + t.Collection }

// ident returns the table's quoted, schema-qualified identifier.
func (t FeatureTable) ident() string { return pgx.Identifier{t.Schema, t.Collection}.Sanitize() }

// objectName returns the quoted name of one of the table's indexes or
// constraints: "_<collection>_<suffix>", shortened with a hash of the
// collection id (after a '$', which no id contains, so a shortened name
// never equals a full one) when it would pass PostgreSQL's 63 bytes.
func (t FeatureTable) objectName(suffix string) string {
	name := "_" + t.Collection + "_" + suffix
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(t.Collection))
		keep := 63 - len(suffix) - 1 - 8 - 2
		name = "_" + t.Collection[:keep] + "$" + hex.EncodeToString(sum[:4]) + "_" + suffix
	}
	return pgx.Identifier{name}.Sanitize()
}

// schemaObject returns the schema-qualified quoted name of one of the
// table's indexes (for DROP INDEX, which needs the schema).
func (t FeatureTable) schemaObject(suffix string) string {
	return pgx.Identifier{t.Schema}.Sanitize() + "." + t.objectName(suffix)
}

// lockKey is the advisory lock that serialises writes to the table (and
// its creation) across sessions.
func (t FeatureTable) lockKey() int64 {
	sum := sha256.Sum256([]byte("wf:features:" + t.Schema + "." + t.Collection))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// schemaLockKey serialises the creation of a tenant schema.
func schemaLockKey(schema string) int64 {
	sum := sha256.Sum256([]byte("wf:schema:" + schema))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// createFeatureTableSQL returns the DDL of t's table; every statement is
// idempotent. The schema is created (and recorded) by CreateFeatureTable.
func createFeatureTableSQL(t FeatureTable) []string {
	tbl := t.ident()
	return append([]string{
		`CREATE TABLE IF NOT EXISTS ` + tbl + ` (
    geoid            uuid        NOT NULL,
    external_id      text        NOT NULL,
    asset_id         text,
    geom             geometry(Geometry, 4326) NOT NULL,
    properties       jsonb       NOT NULL DEFAULT '{}',
    stats            json        NOT NULL DEFAULT '{}',
    geometry_hash    text        NOT NULL,
    attributes_hash  text        NOT NULL,
    validity         tstzrange   NOT NULL,
    transaction_time timestamptz NOT NULL DEFAULT now(),
    deleted_at       timestamptz,
    CONSTRAINT ` + t.objectName("pk") + ` PRIMARY KEY (external_id, transaction_time),
    CONSTRAINT ` + t.objectName("validity") + ` CHECK (NOT isempty(validity) AND NOT lower_inf(validity))
)`,
		`CREATE UNIQUE INDEX IF NOT EXISTS ` + t.objectName("current") + ` ON ` + tbl +
			` (external_id) WHERE upper_inf(validity) AND deleted_at IS NULL`,
	}, afterLoadIndexesSQL(t)...)
}

// afterLoadIndexesSQL returns the DDL of the indexes that a load into an
// empty table builds after its rows are in (see BeginBulkLoad).
func afterLoadIndexesSQL(t FeatureTable) []string {
	tbl := t.ident()
	return []string{
		`CREATE INDEX IF NOT EXISTS ` + t.objectName("geoid") + ` ON ` + tbl + ` (geoid)`,
		`CREATE INDEX IF NOT EXISTS ` + t.objectName("geom") + ` ON ` + tbl + ` USING gist (geom)`,
	}
}

// upgradeFeatureTableSQL turns a table made before PostGIS (geometry_wkb
// bytea and bbox box) into today's: geom is filled from the WKB, and the
// columns PostGIS makes redundant are dropped with their index.
func upgradeFeatureTableSQL(t FeatureTable) []string {
	tbl := t.ident()
	return []string{
		`ALTER TABLE ` + tbl + ` ADD COLUMN IF NOT EXISTS geom geometry(Geometry, 4326)`,
		`UPDATE ` + tbl + ` SET geom = ST_GeomFromWKB(geometry_wkb, 4326) WHERE geom IS NULL`,
		`ALTER TABLE ` + tbl + ` ALTER COLUMN geom SET NOT NULL, DROP COLUMN geometry_wkb, DROP COLUMN IF EXISTS bbox`,
	}
}

// dropGeoJSONCopySQL drops the GeoJSON copy of the geometry that tables
// made before migration 030 kept beside geom (that migration drops it from
// every table it finds; this is for a pre-PostGIS table upgraded later).
func dropGeoJSONCopySQL(t FeatureTable) string {
	return `ALTER TABLE ` + t.ident() + ` DROP COLUMN IF EXISTS geometry`
}

// hasLegacyGeometrySQL reads whether a feature table still has the
// pre-PostGIS geometry_wkb column, and whether it still has the GeoJSON
// copy of its geometry (a jsonb "geometry" column, before migration 030).
const hasLegacyGeometrySQL = `
SELECT EXISTS (SELECT 1 FROM pg_attribute
               WHERE attrelid = to_regclass($1) AND attname = 'geometry_wkb' AND NOT attisdropped),
       EXISTS (SELECT 1 FROM pg_attribute
               WHERE attrelid = to_regclass($1) AND attname = 'geometry' AND NOT attisdropped)`

// ErrNotOwned is wrapped (with wftype.ErrConflict) when a schema or table
// that wf would create or drop exists but was not created by wf: wf never
// writes into, nor drops, what it did not make.
var ErrNotOwned = errors.New("not created by wf")

// ownershipSQL reads whether a schema and a table exist and whether wf
// recorded them as its own (catalog.owned_schemas, catalog.owned_tables).
const ownershipSQL = `
SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
       EXISTS (SELECT 1 FROM catalog.owned_schemas WHERE schema_name = $1),
       to_regclass(format('%I.%I', $1::text, $2::text)) IS NOT NULL,
       EXISTS (SELECT 1 FROM catalog.owned_tables WHERE schema_name = $1 AND table_name = $2)`

// ownership is what ownershipSQL read.
type ownership struct {
	schemaExists, schemaOwned, tableExists, tableOwned bool
}

func readOwnership(ctx context.Context, db DBTX, schema, table string) (ownership, error) {
	var o ownership
	err := db.QueryRow(ctx, ownershipSQL, schema, table).Scan(&o.schemaExists, &o.schemaOwned, &o.tableExists, &o.tableOwned)
	return o, err
}

// CreateFeatureTable creates the tenant schema (when missing) and the
// collection's feature table with its indexes, and records both as wf's
// (the ownership records the drops check); it does nothing for what exists
// already and is wf's. A schema or table of that name that wf did not
// create fails with ErrNotOwned and wftype.ErrConflict, changing nothing.
// Concurrent calls are serialised by advisory locks, so two sessions
// creating the same table never fail on each other. Call it in the
// transaction that registers the collection, or on its own.
func (s *Store) CreateFeatureTable(ctx context.Context, t FeatureTable) error {
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return err
	}
	if err := ensurePostGIS(ctx, s.db); err != nil {
		return wrap("creating feature table "+t.String(), err)
	}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1), pg_advisory_xact_lock($2)`,
			schemaLockKey(t.Schema), t.lockKey()); err != nil {
			return err
		}
		o, err := readOwnership(ctx, tx, t.Schema, t.Collection)
		if err != nil {
			return err
		}
		switch {
		case o.schemaExists && !o.schemaOwned:
			return fmt.Errorf("schema %q exists and was %w: %w", t.Schema, ErrNotOwned, wftype.ErrConflict)
		case o.tableExists && !o.tableOwned:
			return fmt.Errorf("table %s exists and was %w: %w", t, ErrNotOwned, wftype.ErrConflict)
		}
		if !o.schemaExists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{t.Schema}.Sanitize()); err != nil {
				return err
			}
			// A record left by a schema someone else dropped is taken over.
			if _, err := tx.Exec(ctx, `
INSERT INTO catalog.owned_schemas (schema_name) VALUES ($1)
ON CONFLICT (schema_name) DO UPDATE SET created_at = now()`, t.Schema); err != nil {
				return err
			}
		}
		var legacy, geoJSONCopy bool
		if err := tx.QueryRow(ctx, hasLegacyGeometrySQL, t.ident()).Scan(&legacy, &geoJSONCopy); err != nil {
			return err
		}
		stmts := createFeatureTableSQL(t)
		if legacy {
			stmts = append(upgradeFeatureTableSQL(t), stmts[1:]...)
		}
		if geoJSONCopy {
			stmts = append(stmts, dropGeoJSONCopySQL(t))
		}
		for _, stmt := range stmts {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `
INSERT INTO catalog.owned_tables (schema_name, table_name) VALUES ($1, $2)
ON CONFLICT (schema_name, table_name) DO NOTHING`, t.Schema, t.Collection)
		return err
	})
	return wrap("creating feature table "+t.String(), err)
}

// SchemaForeign reports whether a schema exists that wf did not create (no
// ownership record): a catalog may not be registered on it.
func (s *Store) SchemaForeign(ctx context.Context, schema string) (bool, error) {
	o, err := readOwnership(ctx, s.db, schema, "")
	return o.schemaExists && !o.schemaOwned, wrap("reading the ownership of schema "+schema, err)
}

// FeatureTableExists reports whether the collection's feature table exists.
func (s *Store) FeatureTableExists(ctx context.Context, t FeatureTable) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t.ident()).Scan(&ok)
	return ok, wrap("looking up feature table "+t.String(), err)
}

// ResolveFeatureTable returns the feature table of a registered collection:
// its catalog's schema_name and the collection id. It fails with
// wftype.ErrNotFound when the catalog or the collection does not exist.
func (s *Store) ResolveFeatureTable(ctx context.Context, catalogID, collectionID string) (FeatureTable, error) {
	const q = `
SELECT c.schema_name, (k.collection_id IS NOT NULL)
FROM catalog.catalogs c
LEFT JOIN catalog.collections k ON k.catalog_id = c.catalog_id AND k.collection_id = $2
WHERE c.catalog_id = $1`
	var schema string
	var found bool
	err := s.db.QueryRow(ctx, q, catalogID, collectionID).Scan(&schema, &found)
	if errors.Is(err, pgx.ErrNoRows) {
		return FeatureTable{}, fmt.Errorf("catalog %q: %w", catalogID, wftype.ErrNotFound)
	}
	if err != nil {
		return FeatureTable{}, wrap("looking up the feature table of "+catalogID+"/"+collectionID, err)
	}
	if !found {
		return FeatureTable{}, fmt.Errorf("collection %q of catalog %q: %w", collectionID, catalogID, wftype.ErrNotFound)
	}
	return NewFeatureTable(schema, collectionID)
}

// TaskFeatureTable is ResolveFeatureTable and CreateFeatureTable for a
// handler of a task of tenant schema: it returns the feature table of
// collection catalogID/collectionID, created when missing. A tenant's task
// reaches only its own catalogs (a task of wftype.SystemSchema reaches
// any). An unknown collection, an invalid table name and another tenant's
// catalog fail permanently (wftype.Permanent), as "error <doing>
// catalog/collection: ..."; other errors are returned for a retry.
func (s *Store) TaskFeatureTable(ctx context.Context, schema, catalogID, collectionID, doing string) (FeatureTable, error) {
	table, err := s.ResolveFeatureTable(ctx, catalogID, collectionID)
	if err != nil {
		if errors.Is(err, wftype.ErrNotFound) || errors.Is(err, ErrInvalidFeatureTable) {
			return FeatureTable{}, wftype.Permanent(fmt.Errorf("error %s %s/%s: %w", doing, catalogID, collectionID, err))
		}
		return FeatureTable{}, err
	}
	if schema != table.Schema && schema != wftype.SystemSchema {
		return FeatureTable{}, wftype.Permanent(fmt.Errorf("error %s %s/%s: the task belongs to tenant %q, the catalog to %q",
			doing, catalogID, collectionID, schema, table.Schema))
	}
	if err := s.CreateFeatureTable(ctx, table); err != nil {
		return FeatureTable{}, err
	}
	return table, nil
}

// DropOutcome says what a drop did.
type DropOutcome string

// Drop outcomes.
const (
	// DropDropped: the table (or schema) was dropped.
	DropDropped DropOutcome = "dropped"
	// DropAbsent: there was nothing to drop.
	DropAbsent DropOutcome = "absent"
	// DropPurged: the collection (or catalog) was registered again since it
	// was deleted, so only the rows written before the new registration were
	// deleted and the table (or schema) was kept.
	DropPurged DropOutcome = "purged"
)

// DropResult is the outcome of DropFeatureTable or of one table of
// DropTenantSchema.
type DropResult struct {
	Table   string      `json:"table"`
	Outcome DropOutcome `json:"outcome"`
	// Purged is how many old rows were deleted (DropPurged only).
	Purged int64 `json:"purged_rows"`
}

// dropFeatureTableTx drops (or purges) one table inside tx, which holds a
// SHARE lock on catalog.collections, so the registry cannot change under it.
func dropFeatureTableTx(ctx context.Context, tx pgx.Tx, t FeatureTable) (DropResult, error) {
	res := DropResult{Table: t.String()}
	o, err := readOwnership(ctx, tx, t.Schema, t.Collection)
	if err != nil {
		return res, err
	}
	if !o.tableExists {
		res.Outcome = DropAbsent
		return res, nil
	}
	if !o.tableOwned {
		return res, fmt.Errorf("table %s was %w, so wf does not drop it: %w", t, ErrNotOwned, wftype.ErrConflict)
	}
	// A collection registered again after its deletion (in a catalog with
	// the same schema) keeps its table; the rows of the deleted incarnation,
	// written before the new registration, go.
	var since *time.Time
	err = tx.QueryRow(ctx, `
SELECT k.created_at FROM catalog.collections k JOIN catalog.catalogs c USING (catalog_id)
WHERE c.schema_name = $1 AND k.collection_id = $2`, t.Schema, t.Collection).Scan(&since)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return res, err
	}
	if since != nil {
		tag, err := tx.Exec(ctx, `DELETE FROM `+t.ident()+` WHERE transaction_time < $1`, *since)
		if err != nil {
			return res, err
		}
		if tag.RowsAffected() > 0 {
			if err := bumpFeaturesVersion(ctx, tx, t); err != nil {
				return res, err
			}
		}
		res.Outcome, res.Purged = DropPurged, tag.RowsAffected()
		return res, nil
	}
	if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+t.ident()); err != nil {
		return res, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM catalog.owned_tables WHERE schema_name = $1 AND table_name = $2`,
		t.Schema, t.Collection); err != nil {
		return res, err
	}
	res.Outcome = DropDropped
	return res, nil
}

// dropLockTimeout bounds every lock wait of a drop: the drop holds the
// registry's tables in SHARE mode, which stops catalogs and collections
// from being created, so it never waits long for the feature table (an
// export reading it, say) but fails, to be retried by its task.
const dropLockTimeout = "5s"

// lockRegistry bounds the transaction's lock waits and takes the registry's
// tables in SHARE mode, so no catalog or collection is created or deleted
// until the transaction ends.
func lockRegistry(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+dropLockTimeout+`'`); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `LOCK TABLE catalog.catalogs, catalog.collections IN SHARE MODE`)
	return err
}

// ErrNotDeleted is wrapped when a drop names a catalog or collection whose
// deletion the registry has no record of (catalog.deletions): a drop runs
// only after a deletion, for the schema the deleted catalog had.
var ErrNotDeleted = errors.New("the registry has no record of its deletion")

// deletionRecordedSQL reports whether the registry recorded the deletion of
// catalog $1 with schema $3: of its collection $2, or of the whole catalog.
const deletionRecordedSQL = `
SELECT EXISTS (SELECT 1 FROM catalog.deletions
               WHERE catalog_id = $1 AND schema_name = $3 AND collection_id IN ($2, ''))`

// DeletionRecorded reports whether the registry recorded the deletion of
// catalogID with schema (of its collection, or of the whole catalog when
// collection is "" or the catalog went): what confirms a catalog.deleted
// or collection.deleted event before wf acts on it.
func (s *Store) DeletionRecorded(ctx context.Context, catalogID, collection, schema string) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, deletionRecordedSQL, catalogID, collection, schema).Scan(&ok)
	return ok, wrap(fmt.Sprintf("reading the deletion record of catalog %q", catalogID), err)
}

// checkDeleted fails with ErrNotDeleted unless the registry recorded the
// deletion of catalogID (collection "" for the whole catalog) with schema,
// or of the whole catalog when a collection is asked for.
func checkDeleted(ctx context.Context, tx pgx.Tx, catalogID, collection, schema string) error {
	var ok bool
	if err := tx.QueryRow(ctx, deletionRecordedSQL, catalogID, collection, schema).Scan(&ok); err != nil {
		return err
	}
	if ok {
		return nil
	}
	what := fmt.Sprintf("catalog %q with schema %q", catalogID, schema)
	if collection != "" {
		what = fmt.Sprintf("collection %q of catalog %q with schema %q", collection, catalogID, schema)
	}
	return fmt.Errorf("%s: %w, so nothing is dropped: %w", what, ErrNotDeleted, wftype.ErrConflict)
}

// DropFeatureTable drops the feature table of the deleted collection
// catalogID/t.Collection. Destruction is checked twice: the registry must
// have recorded the collection's (or its catalog's) deletion with the
// table's schema (else ErrNotDeleted), and the table must be one wf created
// (catalog.owned_tables, else ErrNotOwned). When a collection with the same
// id has been registered since in a catalog with the same schema, the table
// is kept and only the rows written before that registration are deleted. Locks on the registry make the
// checks and the drop atomic with respect to catalogs and collections being
// created; a lock that does not come within 5 seconds fails the drop (retry
// it).
func (s *Store) DropFeatureTable(ctx context.Context, catalogID string, t FeatureTable) (DropResult, error) {
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return DropResult{}, err
	}
	var res DropResult
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := lockRegistry(ctx, tx); err != nil {
			return err
		}
		if err := checkDeleted(ctx, tx, catalogID, t.Collection, t.Schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, t.lockKey()); err != nil {
			return err
		}
		var err error
		res, err = dropFeatureTableTx(ctx, tx, t)
		return err
	})
	return res, wrap("dropping feature table "+t.String(), err)
}

// SchemaDropResult is the outcome of DropTenantSchema.
type SchemaDropResult struct {
	Schema  string
	Outcome DropOutcome
	// Tables holds, when the schema was kept (a catalog uses it again), what
	// happened to each table of the deleted catalog's collections.
	Tables []DropResult
}

// foreignRelationsSQL lists the tables, views and sequences of a schema
// that are not wf's feature tables (an owned table's own objects, its
// indexes, are not listed: their relkind is not listed here).
const foreignRelationsSQL = `
SELECT coalesce(array_agg(c.relname::text ORDER BY c.relname), '{}')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
  AND NOT EXISTS (SELECT 1 FROM catalog.owned_tables o WHERE o.schema_name = $1 AND o.table_name = c.relname)`

// DropTenantSchema drops the schema of the deleted catalog catalogID with
// everything in it. Destruction is checked twice: the registry must have
// recorded catalogID's deletion with this schema (else ErrNotDeleted), and
// the schema must be
// one wf created (catalog.owned_schemas) holding only tables wf created
// (else ErrNotOwned). When a catalog uses the schema again, the schema is kept and each of the deleted
// catalog's collections (listed in collections) is handled as
// DropFeatureTable does. Reserved schemas (public, catalog, tasks, system,
// information_schema, pg_*) are refused.
func (s *Store) DropTenantSchema(ctx context.Context, catalogID, schema string, collections []string) (SchemaDropResult, error) {
	res := SchemaDropResult{Schema: schema}
	if err := checkTenantSchema(schema); err != nil {
		return res, err
	}
	tables := make([]FeatureTable, 0, len(collections))
	for _, c := range collections {
		t, err := NewFeatureTable(schema, c)
		if err != nil {
			return res, err
		}
		tables = append(tables, t)
	}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := lockRegistry(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, schemaLockKey(schema)); err != nil {
			return err
		}
		if err := checkDeleted(ctx, tx, catalogID, "", schema); err != nil {
			return err
		}
		var inUse bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM catalog.catalogs WHERE schema_name = $1)`,
			schema).Scan(&inUse); err != nil {
			return err
		}
		o, err := readOwnership(ctx, tx, schema, "")
		if err != nil {
			return err
		}
		switch {
		case !o.schemaExists:
			res.Outcome = DropAbsent
		case !o.schemaOwned:
			return fmt.Errorf("schema %q was %w, so wf does not drop it: %w", schema, ErrNotOwned, wftype.ErrConflict)
		case inUse:
			res.Outcome = DropPurged
			for _, t := range tables {
				if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, t.lockKey()); err != nil {
					return err
				}
				r, err := dropFeatureTableTx(ctx, tx, t)
				if err != nil {
					return err
				}
				res.Tables = append(res.Tables, r)
			}
		default:
			var foreign []string
			if err := tx.QueryRow(ctx, foreignRelationsSQL, schema).Scan(&foreign); err != nil {
				return err
			}
			if len(foreign) > 0 {
				return fmt.Errorf("schema %q holds tables wf did not create (%s), so wf does not drop it: %w: %w",
					schema, strings.Join(foreign, ", "), ErrNotOwned, wftype.ErrConflict)
			}
			if _, err := tx.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
				return err
			}
			// The schema's table records go with it (ON DELETE CASCADE).
			if _, err := tx.Exec(ctx, `DELETE FROM catalog.owned_schemas WHERE schema_name = $1`, schema); err != nil {
				return err
			}
			res.Outcome = DropDropped
		}
		return nil
	})
	return res, wrap("dropping tenant schema "+schema, err)
}
