package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// setReportRecordsSQL replaces the records the database reporter keeps for
// a task (migration 023). The id's embedded time prunes the update to one
// partition.
const setReportRecordsSQL = `
UPDATE tasks.tasks SET kept_records = $3::jsonb
WHERE task_id = $1 AND "timestamp" = $2`

// SetReportRecords replaces the kept records of task id with records, a
// JSON array of {"n", "status", "envelope", "truncated"} ordered by n (see
// migration 023). It is the database reporter's write (it satisfies
// dbreporter.ProgressWriter). A task that does not exist gives
// wftype.ErrNotFound.
func (s *Store) SetReportRecords(ctx context.Context, id uuid.UUID, records json.RawMessage) error {
	return s.setTaskJSON(ctx, id, "report records", setReportRecordsSQL, '[', records)
}

// ReportRecord is one record the database reporter kept.
type ReportRecord struct {
	// N is the record's number in its run, from 1.
	N int64
	// Status is SUCCESS, REJECTED or FAILED.
	Status string
	// Envelope is the record's per-record envelope.
	Envelope json.RawMessage
	// Truncated says the envelope was shortened to be kept (its geometry,
	// or its properties and stats, left out).
	Truncated bool
}

// ReportRecordsParams selects a page of a task's kept records.
type ReportRecordsParams struct {
	// Statuses keeps records of these outcomes only; empty means all.
	Statuses []string
	// After skips records numbered After or less (the keyset cursor).
	After int64
	// Limit is the most records returned; at least 1.
	Limit int
}

// reportRecordsSQL reads a page of a task's kept records: one primary-key
// read of the task, its array unnested (at most a few hundred entries, the
// reporter's bound). The LEFT JOIN keeps a row for a task with no match, so
// one statement also tells a task without records from a missing task
// (no row at all). $1 task id, $2 its creation time (its partition), $3
// statuses (NULL: all), $4 after, $5 limit.
const reportRecordsSQL = `
SELECT r.n, r.status, r.envelope, r.truncated
FROM tasks.tasks t
LEFT JOIN LATERAL (
    SELECT (e ->> 'n')::bigint AS n, e ->> 'status' AS status, e -> 'envelope' AS envelope,
           coalesce((e ->> 'truncated')::boolean, false) AS truncated
    FROM jsonb_array_elements(coalesce(t.kept_records, '[]'::jsonb)) AS x(e)
    WHERE ($3::text[] IS NULL OR e ->> 'status' = ANY ($3))
      AND (e ->> 'n')::bigint > $4
    ORDER BY (e ->> 'n')::bigint
    LIMIT $5
) r ON true
WHERE t.task_id = $1 AND t."timestamp" = $2
ORDER BY r.n`

// ReportRecords returns a page of the records the database reporter kept
// for task id, by record number. It fails with wftype.ErrNotFound for a
// task that does not exist.
func (s *Store) ReportRecords(ctx context.Context, id uuid.UUID, p ReportRecordsParams) ([]ReportRecord, error) {
	if p.Limit < 1 {
		return nil, fmt.Errorf("error reading the report records of task %s: limit %d, want at least 1", id, p.Limit)
	}
	var statuses []string
	if len(p.Statuses) > 0 {
		statuses = p.Statuses
	}
	return queryOfTask(ctx, s.db, "reading the report records of a task", reportRecordsSQL, id, func(r pgx.Row) (*ReportRecord, error) {
		var (
			n         *int64
			status    *string
			envelope  []byte
			truncated *bool
		)
		if err := r.Scan(&n, &status, &envelope, &truncated); err != nil || n == nil {
			return nil, err // no record: the task, with none to show
		}
		return &ReportRecord{N: *n, Status: *status, Envelope: envelope, Truncated: *truncated}, nil
	}, statuses, p.After, p.Limit)
}
