package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// PauseKind says what a pause stops: the tasks of one task type, or those
// of one tenant (schema_name).
type PauseKind string

// Pause kinds.
const (
	PauseTaskType PauseKind = "task_type"
	PauseTenant   PauseKind = "tenant"
)

// Valid reports whether k is a known kind.
func (k PauseKind) Valid() bool { return k == PauseTaskType || k == PauseTenant }

// Pause is one row of tasks.pauses: while it exists no instance claims the
// PENDING tasks it names. Running tasks run on; new tasks are still
// accepted and wait. Its JSON form is the HTTP API's schema Pause (the pause
// routes and GET /stats answer it as it is) and what `wf tasks paused`
// prints as JSON.
type Pause struct {
	Kind     PauseKind `json:"kind"`
	Name     string    `json:"name"`
	Reason   *string   `json:"reason,omitempty"`
	PausedBy *string   `json:"paused_by,omitempty"`
	PausedAt time.Time `json:"paused_at"`
}

// pausedTypesSQL and pausedTenantsSQL are the conditions the claim
// statements add: a slot of a paused task type is dropped before any index
// is read, and a paused tenant's rows are skipped by a filter on the scan of
// the partial index on PENDING rows. Both read tasks.pauses (a row per
// paused name) once per statement, as an InitPlan: the claim keeps its plan,
// and a pause written by any instance holds from the next claim of every
// instance on.
const (
	pausedTypesSQL   = `s.task_type <> ALL (ARRAY(SELECT p.name FROM tasks.pauses p WHERE p.kind = 'task_type'))`
	pausedTenantsSQL = `t.schema_name <> ALL (ARRAY(SELECT p.name FROM tasks.pauses p WHERE p.kind = 'tenant'))`
)

// PauseParams is a pause to record.
type PauseParams struct {
	Kind   PauseKind
	Name   string
	Reason string // optional
	By     string // optional: who paused (a token's name, "cli")
}

// PauseQueue records a pause, or returns the existing one unchanged (a
// second pause of the same name is not an error: created is false). A
// tenant is its schema_name: one no catalog has (but system) fails with
// wftype.ErrNotFound, so that a typo does not pause nothing. Task types are
// checked by the caller, against its specs.
func (s *Store) PauseQueue(ctx context.Context, p PauseParams) (pause Pause, created bool, err error) {
	if !p.Kind.Valid() || p.Name == "" {
		return Pause{}, false, fmt.Errorf("error pausing: kind %q, name %q: want task_type or tenant and a name", p.Kind, p.Name)
	}
	if p.Kind == PauseTenant && p.Name != wftype.SystemSchema {
		const exists = `SELECT EXISTS (SELECT 1 FROM catalog.catalogs WHERE schema_name = $1)`
		var ok bool
		// The registry is in the catalog's database (Catalog).
		if err := s.Catalog().db.QueryRow(ctx, exists, p.Name).Scan(&ok); err != nil {
			return Pause{}, false, wrap("looking up tenant "+p.Name, err)
		}
		if !ok {
			return Pause{}, false, fmt.Errorf("no tenant has schema_name %q (a catalog's schema_name, or system): %w", p.Name, wftype.ErrNotFound)
		}
	}
	const q = `
INSERT INTO tasks.pauses (kind, name, reason, paused_by)
VALUES ($1, $2, nullif($3, ''), nullif($4, ''))
ON CONFLICT (kind, name) DO NOTHING
RETURNING kind, name, reason, paused_by, paused_at`
	pause, err = scanPause(s.db.QueryRow(ctx, q, p.Kind, p.Name, p.Reason, p.By))
	if err == nil {
		return pause, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Pause{}, false, wrap("pausing "+string(p.Kind)+" "+p.Name, err)
	}
	const get = `SELECT kind, name, reason, paused_by, paused_at FROM tasks.pauses WHERE kind = $1 AND name = $2`
	pause, err = scanPause(s.db.QueryRow(ctx, get, p.Kind, p.Name))
	if errors.Is(err, pgx.ErrNoRows) { // resumed in between: pause again
		return s.PauseQueue(ctx, p)
	}
	return pause, false, wrap("reading the pause of "+string(p.Kind)+" "+p.Name, err)
}

// ResumeQueue removes a pause and wakes the dispatchers (a sweep on the
// queued channel: the leader's wakes at once, followers' at their next
// poll). Resuming what is not paused fails with wftype.ErrNotFound.
func (s *Store) ResumeQueue(ctx context.Context, kind PauseKind, name string) (Pause, error) {
	const q = `
WITH resumed AS (
    DELETE FROM tasks.pauses WHERE kind = $1 AND name = $2
    RETURNING kind, name, reason, paused_by, paused_at
),
notified AS (SELECT count(pg_notify($3, '')) AS n FROM resumed)
SELECT r.* FROM resumed r, notified`
	p, err := scanPause(s.db.QueryRow(ctx, q, kind, name, s.channels.TaskQueued))
	if errors.Is(err, pgx.ErrNoRows) {
		return Pause{}, fmt.Errorf("%s %q is not paused: %w", kind, name, wftype.ErrNotFound)
	}
	return p, wrap("resuming "+string(kind)+" "+name, err)
}

// ListPauses returns every pause, by kind then name.
func (s *Store) ListPauses(ctx context.Context) ([]Pause, error) {
	const q = `SELECT kind, name, reason, paused_by, paused_at FROM tasks.pauses ORDER BY kind, name`
	out, err := queryAll(ctx, s.db, "listing pauses", q, scanPause)
	if out == nil && err == nil {
		out = []Pause{}
	}
	return out, err
}

// PauseOf returns the pause that holds the PENDING tasks of taskType and
// tenant (a schema_name): the task type's, else the tenant's; nil when
// neither is paused. A run started outside the claim, which reads the
// pauses itself, checks it first (wf exec).
func (s *Store) PauseOf(ctx context.Context, taskType, tenant string) (*Pause, error) {
	const q = `
SELECT kind, name, reason, paused_by, paused_at
FROM tasks.pauses
WHERE (kind = 'task_type' AND name = $1) OR (kind = 'tenant' AND name = $2)
ORDER BY kind = 'task_type' DESC
LIMIT 1`
	p, err := scanPause(s.db.QueryRow(ctx, q, taskType, tenant))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("reading the pauses of task type "+taskType+" and tenant "+tenant, err)
	}
	return &p, nil
}

func scanPause(row pgx.Row) (Pause, error) {
	var p Pause
	var kind string
	err := row.Scan(&kind, &p.Name, &p.Reason, &p.PausedBy, &p.PausedAt)
	p.Kind, p.PausedAt = PauseKind(kind), p.PausedAt.UTC()
	return p, err
}
