package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// setProgressSQL merges a JSON object into a task's progress: its keys
// replace the same keys of the stored progress and the others stay, so the
// database reporter's counts and a remote worker's own fields live side by
// side. The id's embedded time prunes the update to one partition.
const setProgressSQL = `
UPDATE tasks.tasks
SET progress = coalesce(progress, '{}'::jsonb) || $3::jsonb
WHERE task_id = $1 AND "timestamp" = $2`

// getProgressSQL reads a task's progress; the id's embedded time prunes the
// look-up to one partition.
const getProgressSQL = `
SELECT progress FROM tasks.tasks WHERE task_id = $1 AND "timestamp" = $2`

// SetProgress merges progress, a JSON object, into the progress of task id
// (see setProgressSQL). It is the write behind the database reporter's
// batched flushes (it satisfies dbreporter.ProgressWriter). A task that does
// not exist gives wftype.ErrNotFound.
func (s *Store) SetProgress(ctx context.Context, id uuid.UUID, progress json.RawMessage) error {
	return s.setTaskJSON(ctx, id, "progress", setProgressSQL, '{', progress)
}

// setTaskJSON writes doc, a JSON object ('{') or array ('['), into a
// column of task id with query ($1 the id, $2 its creation time, $3 the
// document); what names the column in errors. What jsonb refuses though
// JSON allows it (\u0000, a lone surrogate, invalid UTF-8) is replaced, as
// for outcomes, rather than failing the write. A task that does not exist
// gives wftype.ErrNotFound.
func (s *Store) setTaskJSON(ctx context.Context, id uuid.UUID, what, query string, open byte, doc json.RawMessage) error {
	if d := bytes.TrimSpace(doc); len(d) == 0 || d[0] != open || !json.Valid(d) {
		kind := "object"
		if open == '[' {
			kind = "array"
		}
		return fmt.Errorf("error setting the %s of task %s: want a JSON %s, got %.40q", what, id, kind, doc)
	}
	tag, err := s.db.Exec(ctx, query, id, IDTime(id), string(appendJSONValue(nil, doc)))
	if err != nil {
		return wrap(fmt.Sprintf("setting the %s of task %s", what, id), err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("task %s: %w", id, wftype.ErrNotFound)
	}
	return nil
}

// GetProgress returns the progress of task id: nil when it has none yet,
// wftype.ErrNotFound when the task does not exist.
func (s *Store) GetProgress(ctx context.Context, id uuid.UUID) (json.RawMessage, error) {
	var progress []byte
	err := s.db.QueryRow(ctx, getProgressSQL, id, IDTime(id)).Scan(&progress)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("task %s: %w", id, wftype.ErrNotFound)
	}
	if err != nil {
		return nil, wrap(fmt.Sprintf("reading the progress of task %s", id), err)
	}
	return progress, nil
}
