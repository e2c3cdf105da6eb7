package api

import (
	"context"
	"net/http"
	"time"

	"github.com/wfhq/wf/internal/dbmigrate"
)

// readyView answers GET /readyz (schema Readiness).
type readyView struct {
	Status     string `json:"status"`
	Database   string `json:"database"`
	Migrations struct {
		Current int32    `json:"current"`
		Latest  int32    `json:"latest"`
		Pending []string `json:"pending,omitempty"`
	} `json:"migrations"`
}

// readyz answers GET /readyz: 200 when the database answers and every
// embedded migration is applied, else 503 saying which check failed.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ *principal) error {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	conn, err := s.cfg.Pool.Acquire(ctx)
	if err != nil {
		return unavailable("the database is not reachable")
	}
	defer conn.Release()
	st, err := dbmigrate.CurrentStatus(ctx, conn.Conn())
	if err != nil {
		return unavailable("the database does not answer the migration status query")
	}
	if !st.UpToDate() {
		return unavailable("the database schema is at version %d of %d: run wf migrate up", st.Current, st.Latest)
	}
	var v readyView
	v.Status, v.Database = "ready", "ok"
	v.Migrations.Current, v.Migrations.Latest, v.Migrations.Pending = st.Current, st.Latest, st.Pending
	writeJSON(w, http.StatusOK, v)
	return nil
}

// unavailable is a 503 problem.
func unavailable(format string, args ...any) *problem {
	p := newProblem(http.StatusServiceUnavailable, typeUnavailable, "Not ready", format, args...)
	p.header = http.Header{"Retry-After": {"5"}}
	return p
}
