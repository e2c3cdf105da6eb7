package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PostGIS is a catalog requirement, not a queue requirement: the core
// migrations never create the extension, so the queue runs on any
// PostgreSQL. The catalog creates it lazily, the first time a feature table
// is created (wf's local cluster and the test template create it up front,
// when the package is installed).

// ErrNoPostGIS is wrapped when the catalog needs PostGIS and the database
// does not have it and cannot create it. The message says what to install.
var ErrNoPostGIS = errors.New("the catalog needs the PostGIS extension")

// postgisLockKey serialises CREATE EXTENSION across sessions (two
// concurrent CREATE EXTENSION IF NOT EXISTS may otherwise fail on each
// other's catalog rows).
const postgisLockKey = int64(0x77665f706f737467) // "wf_postg"

// postgisInstalledSQL reads whether PostGIS is installed in this database,
// whether the server has the package, and the server's major version.
const postgisInstalledSQL = `
SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'postgis'),
       EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'postgis'),
       current_setting('server_version_num')::int / 10000,
       current_database()`

// EnsurePostGIS creates the PostGIS extension in the database when it is
// missing. It fails with ErrNoPostGIS, saying what to install or run, when
// the server has no PostGIS package or the role may not create the
// extension; the queue itself never needs it.
func (s *Store) EnsurePostGIS(ctx context.Context) error {
	return wrap("preparing PostGIS", ensurePostGIS(ctx, s.db))
}

func ensurePostGIS(ctx context.Context, db DBTX) error {
	var installed, available bool
	var major int
	var database string
	if err := db.QueryRow(ctx, postgisInstalledSQL).Scan(&installed, &available, &major, &database); err != nil {
		return err
	}
	if installed {
		return nil
	}
	if !available {
		return fmt.Errorf("%w, and this PostgreSQL %d server has no PostGIS package: install it on the database server (Debian: apt-get install postgresql-%d-postgis-3; `make postgres` does it for wf's own cluster)",
			ErrNoPostGIS, major, major)
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, postgisLockKey); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS postgis`)
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
		return fmt.Errorf("%w, and this role may not create it: ask an administrator to run CREATE EXTENSION postgis; in database %q",
			ErrNoPostGIS, database)
	}
	return err
}

// EnsurePostGISOn is EnsurePostGIS on a bare connection, for bootstrap code
// that has no store (wf's local cluster, the test template). A server
// without the PostGIS package is not an error here: the queue runs without
// it, and the catalog says what to install when it is used.
func EnsurePostGISOn(ctx context.Context, conn DBTX) error {
	err := ensurePostGIS(ctx, conn)
	if errors.Is(err, ErrNoPostGIS) {
		return nil
	}
	return wrap("creating the PostGIS extension", err)
}

// GeometryCheck is PostGIS's verdict on one geometry.
type GeometryCheck struct {
	// Reason is empty for a valid geometry, else ST_IsValidReason's words
	// ("Self-intersection[1 1]").
	Reason string
}

// checkGeometriesSQL asks PostGIS whether each WKB geometry is valid
// (OGC validity: no self-intersections, rings that do not cross, holes
// inside their shells) and why not.
const checkGeometriesSQL = `
SELECT CASE WHEN ST_IsValid(g) THEN '' ELSE ST_IsValidReason(g) END
FROM (SELECT ST_GeomFromWKB(w, 4326) AS g, i FROM unnest($1::bytea[]) WITH ORDINALITY AS u(w, i)) v
ORDER BY i`

// ewkb4326 returns little- or big-endian 2D WKB as EWKB with SRID 4326,
// the binary form PostGIS accepts for a geometry(Geometry, 4326) column:
// the SRID flag is set in the outer type and the SRID follows it.
func ewkb4326(wkb []byte) ([]byte, error) {
	if len(wkb) < 5 {
		return nil, fmt.Errorf("a WKB geometry of %d bytes is too short", len(wkb))
	}
	out := make([]byte, 0, len(wkb)+4)
	out = append(out, wkb[0])
	const sridFlag = 0x20000000
	var srid uint32 = 4326
	switch wkb[0] {
	case 1: // little endian
		typ := uint32(wkb[1]) | uint32(wkb[2])<<8 | uint32(wkb[3])<<16 | uint32(wkb[4])<<24 | sridFlag
		out = append(out, byte(typ), byte(typ>>8), byte(typ>>16), byte(typ>>24),
			byte(srid), byte(srid>>8), byte(srid>>16), byte(srid>>24))
	case 0: // big endian
		typ := uint32(wkb[4]) | uint32(wkb[3])<<8 | uint32(wkb[2])<<16 | uint32(wkb[1])<<24 | sridFlag
		out = append(out, byte(typ>>24), byte(typ>>16), byte(typ>>8), byte(typ),
			byte(srid>>24), byte(srid>>16), byte(srid>>8), byte(srid))
	default:
		return nil, fmt.Errorf("a WKB geometry starts with byte order %d, want 0 or 1", wkb[0])
	}
	return append(out, wkb[5:]...), nil
}
