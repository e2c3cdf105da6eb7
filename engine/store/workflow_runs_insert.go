package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// NewWorkflowRun is a run to create.
type NewWorkflowRun struct {
	ID         uuid.UUID // a UUIDv7
	Workflow   string
	SchemaName string
	Inputs     json.RawMessage
	Timeout    time.Duration
	Steps      []string // every step's name: each gets a WAITING row
	Now        *time.Time
	// ParentRunID, ParentStep and ParentItem (-1: none) name the step of
	// the run that starts this one, for a child run.
	ParentRunID *uuid.UUID
	ParentStep  string
	ParentItem  int
	// StartedBy is what started the run (nil: the API or the CLI).
	StartedBy *wftype.RunTrigger
	// StartKey, when set, is the run's dedup key: a run with the same key
	// exists already, the insert writes nothing and InsertWorkflowRun
	// returns ErrRunExists.
	StartKey string
}

// ErrRunExists is returned by InsertWorkflowRun for a run whose start key
// another run holds (the same event or schedule tick started it already).
var ErrRunExists = errors.New("a workflow run with this start key exists")

// InsertWorkflowRun creates a RUNNING run and a WAITING row for each of its
// steps, and returns the run. A run whose StartKey another run holds is
// not created: ErrRunExists (the unique index on start_key makes a
// concurrent insert of the same key wait for the first to commit).
func (s *Store) InsertWorkflowRun(ctx context.Context, r NewWorkflowRun) (wftype.WorkflowRun, error) {
	const q = `
WITH run AS (
    INSERT INTO tasks.workflow_runs (run_id, workflow, schema_name, status, inputs, created_at, deadline,
                                     parent_run_id, parent_step, parent_item, started_by, start_key)
    VALUES ($1, $2, $3, 'RUNNING', $4, coalesce($5::timestamptz, now()),
            coalesce($5::timestamptz, now()) + make_interval(secs => $6),
            $8, nullif($9, ''), $10, $11, nullif($12, ''))
    ON CONFLICT (start_key) WHERE start_key IS NOT NULL DO NOTHING
    RETURNING *
),
steps AS (
    INSERT INTO tasks.workflow_steps (run_id, step, status, updated_at)
    SELECT run.run_id, s, 'WAITING', run.created_at FROM run, unnest($7::text[]) AS s
)
SELECT ` + workflowRunColumns + ` FROM run`
	var parentItem *int32
	if r.ParentRunID != nil && r.ParentItem >= 0 {
		v := int32(r.ParentItem)
		parentItem = &v
	}
	var startedBy []byte
	if r.StartedBy != nil {
		b, err := json.Marshal(r.StartedBy)
		if err != nil {
			return wftype.WorkflowRun{}, fmt.Errorf("error creating a workflow run: %w", err)
		}
		startedBy = b
	}
	run, err := scanWorkflowRun(s.db.QueryRow(ctx, q, r.ID, r.Workflow, r.SchemaName, []byte(r.Inputs), r.Now, r.Timeout.Seconds(), r.Steps,
		r.ParentRunID, r.ParentStep, parentItem, startedBy, r.StartKey))
	if errors.Is(err, pgx.ErrNoRows) && r.StartKey != "" {
		return wftype.WorkflowRun{}, fmt.Errorf("workflow run %q: %w", r.StartKey, ErrRunExists)
	}
	return run, wrap("creating a workflow run", err)
}
