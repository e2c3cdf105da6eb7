package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// The workflows each live instance declares (migration 026): a run whose
// workflow none of them declares can no longer advance, and the leader
// fails it (engine/workflow FailUndeclared) rather than let it wait for
// its deadline.

// DeclareWorkflows states that instance owner, of service, declares
// workflows (none: an empty list, which still says what the instance
// knows) until ttl after now (nil: the database's clock), replacing what it
// stated before.
func (s *Store) DeclareWorkflows(ctx context.Context, owner, service string, workflows []string, ttl time.Duration, now *time.Time) error {
	if workflows == nil {
		workflows = []string{}
	}
	const q = `
INSERT INTO tasks.instance_workflows (owner_id, service, workflows, expires_at)
VALUES ($1, $2, $3, coalesce($4::timestamptz, now()) + make_interval(secs => $5))
ON CONFLICT (owner_id) DO UPDATE
SET service = excluded.service, workflows = excluded.workflows, expires_at = excluded.expires_at`
	_, err := s.db.Exec(ctx, q, owner, service, workflows, now, ttl.Seconds())
	return wrap("declaring the instance's workflows", err)
}

// DeleteExpiredDeclarations deletes the statements of instances that ran
// out before now (nil: the database's clock): instances that stopped, or
// stopped renewing them. It returns how many.
func (s *Store) DeleteExpiredDeclarations(ctx context.Context, now *time.Time) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM tasks.instance_workflows WHERE expires_at <= coalesce($1::timestamptz, now())`, now)
	if err != nil {
		return 0, wrap("deleting expired workflow declarations", err)
	}
	return tag.RowsAffected(), nil
}

// undeclaredRunSQL: no live instance declares the workflow of run r, as
// far as anyone can tell at $1 (nil: the database's clock). Neither the
// caller's specs ($2, the workflows they declare) nor an unexpired
// statement names it, and every election connection of a wf instance to
// this database ("wf-leader:<service>:<owner>", maybe cut to 63 bytes)
// belongs to an instance with an unexpired statement: one that stated
// nothing (a wf of an earlier version) may declare the workflow. The
// pg_stat_activity test does not depend on r (an InitPlan, run once).
const undeclaredRunSQL = `(
    NOT (r.workflow = ANY ($2::text[]))
    AND NOT EXISTS (SELECT 1 FROM tasks.instance_workflows i
                    WHERE i.expires_at > coalesce($1::timestamptz, now()) AND r.workflow = ANY (i.workflows))
    AND NOT EXISTS (
        SELECT 1 FROM pg_stat_activity a
        WHERE a.datname = current_database() AND a.application_name LIKE 'wf-leader:%'
          AND NOT EXISTS (SELECT 1 FROM tasks.instance_workflows i
                          WHERE i.expires_at > coalesce($1::timestamptz, now())
                            AND starts_with('wf-leader:' || i.service || ':' || i.owner_id, a.application_name))))`

// UndeclaredWorkflowRuns lists up to limit RUNNING runs whose workflow no
// live instance declares at now (nil: the database's clock), the caller's
// specs declaring own (see undeclaredRunSQL).
func (s *Store) UndeclaredWorkflowRuns(ctx context.Context, own []string, now *time.Time, limit int) ([]uuid.UUID, error) {
	if own == nil {
		own = []string{}
	}
	return collectIDs(ctx, s, "listing the runs of undeclared workflows", `
SELECT r.run_id FROM tasks.workflow_runs r
WHERE r.status = 'RUNNING' AND `+undeclaredRunSQL+`
ORDER BY r.run_id
LIMIT $3`, now, own, limit)
}

// WorkflowRunUndeclared reports whether no live instance declares the
// workflow of run id at now, as UndeclaredWorkflowRuns tells: asked again
// with the run locked, so an instance that declared it meanwhile saves it.
func (s *Store) WorkflowRunUndeclared(ctx context.Context, id uuid.UUID, own []string, now *time.Time) (bool, error) {
	if own == nil {
		own = []string{}
	}
	var undeclared bool
	err := s.db.QueryRow(ctx, `
SELECT EXISTS (SELECT 1 FROM tasks.workflow_runs r WHERE r.run_id = $3 AND `+undeclaredRunSQL+`)`, now, own, id).Scan(&undeclared)
	return undeclared, wrap("checking whether a run's workflow is declared", err)
}
