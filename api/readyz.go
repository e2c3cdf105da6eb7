package api

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/engine/readreplica"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/internal/dbmigrate"
)

// readyView answers GET /readyz (schema Readiness).
type readyView struct {
	Status     string         `json:"status"`
	Database   string         `json:"database"`
	Migrations migrationsView `json:"migrations"`
	// Catalog is the catalog's own database (catalog.database_url), when
	// it has one: checked as the queue's is.
	Catalog *databaseView `json:"catalog,omitempty"`
	// Replica is the read replica (database.read_url), when one is set:
	// reported, never required (reads go to the primary while it is not
	// usable).
	Replica *replicaView `json:"replica,omitempty"`
	// UnservedTaskTypes are the task types this instance cannot run
	// because their service is not configured, each with the missing
	// setting; reported, they do not make the instance unready.
	UnservedTaskTypes []runnerset.Unserved `json:"unserved_task_types"`
}

// migrationsView is where a database stands against the migrations.
type migrationsView struct {
	Current int32    `json:"current"`
	Latest  int32    `json:"latest"`
	Pending []string `json:"pending,omitempty"`
}

// databaseView is a database's readiness.
type databaseView struct {
	Database   string         `json:"database"`
	Migrations migrationsView `json:"migrations"`
}

// replicaView is the read replica's state: "ok" (reads go to it),
// "lagging" (behind more than reads may lag, readreplica.DefaultMaxLag:
// reads go to the primary) or "unusable" (unreachable, not a standby, or
// not measured yet).
type replicaView struct {
	Status     string   `json:"status"`
	LagSeconds *float64 `json:"lag_seconds,omitempty"`
}

// readyz answers GET /readyz: 200 when the database answers and every
// embedded migration is applied, and so for the catalog's database when
// catalog.database_url names one; else 503 saying which check failed. A
// read replica's state is reported, and so are the task types this
// instance cannot serve (unserved_task_types); neither makes it unready.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ *principal) error {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	var v readyView
	st, prob := migrationState(ctx, s.cfg.Pool, "the database")
	if prob != nil {
		return prob
	}
	v.Status, v.Database, v.Migrations = "ready", "ok", st
	v.UnservedTaskTypes = append([]runnerset.Unserved{}, s.cfg.Unserved...)
	if s.cfg.CatalogPool != nil {
		st, prob := migrationState(ctx, s.cfg.CatalogPool, "the catalog's database (catalog.database_url)")
		if prob != nil {
			return prob
		}
		v.Catalog = &databaseView{Database: "ok", Migrations: st}
	}
	if s.cfg.Reads != nil {
		v.Replica = &replicaView{Status: "unusable"}
		if lag, ok := s.cfg.Reads.Lag(); ok {
			secs := lag.Seconds()
			v.Replica.Status, v.Replica.LagSeconds = "lagging", &secs
			if _, from := s.cfg.Reads.Reads(); from == readreplica.FromReplica {
				v.Replica.Status = "ok"
			}
		}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// migrationState checks that the database of pool (named as what) answers
// and has every embedded migration applied: its status, or the 503 that
// says what is wrong.
func migrationState(ctx context.Context, pool *pgxpool.Pool, what string) (migrationsView, *problem) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return migrationsView{}, unavailable("%s is not reachable", what)
	}
	defer conn.Release()
	st, err := dbmigrate.CurrentStatus(ctx, conn.Conn())
	if err != nil {
		return migrationsView{}, unavailable("%s does not answer the migration status query", what)
	}
	if !st.UpToDate() {
		return migrationsView{}, unavailable("%s's schema is at version %d of %d: run wf migrate up", what, st.Current, st.Latest)
	}
	return migrationsView{Current: st.Current, Latest: st.Latest, Pending: st.Pending}, nil
}

// unavailable is a 503 problem.
func unavailable(format string, args ...any) *problem {
	p := newProblem(http.StatusServiceUnavailable, typeUnavailable, "Not ready", format, args...)
	p.header = http.Header{"Retry-After": {"5"}}
	return p
}
