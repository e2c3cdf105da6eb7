package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// A dedup key held for a period (migration 033): a task type's `unique`
// keeps its tasks' keys in tasks.task_dedup after they ended in one of its
// keep states, until expires_at, the key's first task's creation time plus
// the period. Periods are reckoned in task creation times (the times the
// UUIDv7 ids carry): an enqueue whose task is created at or after the
// expiry of an ended holder takes its row over, one created before is
// deduplicated against it.

// dedupExpirySQL is the expires_at and keep_states a new key row gets from
// a row of input (unique_seconds, keep_states: NULL without a period; ts,
// the task's creation time).
const dedupExpirySQL = `ts + make_interval(secs => unique_seconds), string_to_array(keep_states, ',')`

// takeOverKeys returns the CTE taken_over of an insert: it gives the stale
// key rows (their task ended, their period over when the new task is
// created) to the tasks of from, a relation of at most one task per key
// (schema_name, dedup_key, task_id, ts, unique_seconds, keep_states), and
// returns the ids of those tasks. A live holder, or an ended one within
// its period, is left alone. An UPDATE rather than ON CONFLICT DO UPDATE:
// the latter fails when a batch holds a key twice (a row cannot be
// affected twice in one command), and it would turn the insert of every
// keyed task into an update of its conflicting row. Two enqueues racing
// for a stale row take turns on its lock: the second finds it live and
// leaves it. A stale row that maintenance deletes meanwhile is taken by
// the insert (ON CONFLICT DO NOTHING waits for the delete) instead.
func takeOverKeys(from string) string {
	return `taken_over AS (
    UPDATE tasks.task_dedup d
    SET task_id = i.task_id, task_timestamp = i.ts, ended_at = NULL,
        expires_at = i.ts + make_interval(secs => i.unique_seconds),
        keep_states = string_to_array(i.keep_states, ',')
    FROM ` + from + ` i
    WHERE d.schema_name = i.schema_name AND d.dedup_key = i.dedup_key
      AND d.ended_at IS NOT NULL AND d.expires_at <= i.ts
    RETURNING i.task_id
)`
}

// firstOfEachKeySQL is the relation takeOverKeys reads in insertTasksSQL:
// the tasks of the statement's input whose key the insert (dedup) did not
// take, the first of each key. Those are the few whose key is held (an
// enqueue of new keys updates nothing, and sorts nothing), and a key's
// first task is left out only when the insert took the key for it, which
// it does only when no row of the key existed for the update to find.
const firstOfEachKeySQL = `(SELECT DISTINCT ON (schema_name, dedup_key) schema_name, dedup_key, task_id, ts, unique_seconds, keep_states
          FROM input
          WHERE dedup_key IS NOT NULL AND NOT EXISTS (SELECT 1 FROM dedup WHERE dedup.task_id = input.task_id)
          ORDER BY schema_name, dedup_key, ord)`

// uniqueArgs returns the insert's per-task period (seconds, nil without
// one) and keep states (comma-joined, nil without a period).
func uniqueArgs(tasks []NewTask) (seconds []*float64, keep []*string) {
	seconds, keep = make([]*float64, len(tasks)), make([]*string, len(tasks))
	for i := range tasks {
		t := &tasks[i]
		if t.UniqueFor <= 0 || t.DedupKey == "" {
			continue
		}
		sec := t.UniqueFor.Seconds()
		states := make([]string, len(t.UniqueStates))
		for j, st := range t.UniqueStates {
			states[j] = string(st)
		}
		joined := strings.Join(states, ",")
		seconds[i], keep[i] = &sec, &joined
	}
	return seconds, keep
}

// deleteStaleDedupKeysSQL deletes up to $2 key rows whose task ended and
// whose period ended before $1 (task_dedup_ended_expiry_idx). The
// condition is repeated on the target: a row an enqueue took over
// meanwhile is live again.
const deleteStaleDedupKeysSQL = `
DELETE FROM tasks.task_dedup
WHERE (schema_name, dedup_key) IN (
    SELECT schema_name, dedup_key FROM tasks.task_dedup
    WHERE ended_at IS NOT NULL AND expires_at <= $1
    ORDER BY expires_at
    LIMIT $2)
  AND ended_at IS NOT NULL AND expires_at <= $1`

// DeleteStaleDedupKeys deletes up to limit dedup key rows of ended tasks
// whose unique period was over at now, and returns how many it deleted.
// Such a row holds nothing (an enqueue would take it over); the leader's
// maintenance deletes them so that the table keeps only the keys held.
func (s *Store) DeleteStaleDedupKeys(ctx context.Context, now time.Time, limit int) (int64, error) {
	tag, err := s.db.Exec(ctx, deleteStaleDedupKeysSQL, now, limit)
	if err != nil {
		return 0, wrap("deleting stale dedup keys", err)
	}
	return tag.RowsAffected(), nil
}

// DedupKeyHold is where a dedup key stands: the task holding it and, for a
// key held for a period, until when.
type DedupKeyHold struct {
	TaskID    [16]byte
	ExpiresAt *time.Time // nil: held while the task is live
	Ended     bool       // the task ended and the key is kept for its period
	Keep      []wftype.TaskStatus
}

// DedupKeyHold reads the row of tenant schema's dedup key key, or nil when
// no row is there (the key is free).
func (s *Store) DedupKeyHold(ctx context.Context, schema, key string) (*DedupKeyHold, error) {
	var h DedupKeyHold
	var keep []string
	err := s.db.QueryRow(ctx, `
SELECT task_id, expires_at, ended_at IS NOT NULL, coalesce(keep_states, '{}')
FROM tasks.task_dedup WHERE schema_name = $1 AND dedup_key = $2`, schema, key).Scan(&h.TaskID, &h.ExpiresAt, &h.Ended, &keep)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		return nil, wrap("reading dedup key", err)
	}
	for _, st := range keep {
		h.Keep = append(h.Keep, wftype.TaskStatus(st))
	}
	if h.ExpiresAt != nil {
		u := h.ExpiresAt.UTC()
		h.ExpiresAt = &u
	}
	return &h, nil
}

// CountKeptDedupKeys counts the dedup keys of ended tasks that their
// unique period still holds at now (task_dedup_ended_expiry_idx).
func (s *Store) CountKeptDedupKeys(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM tasks.task_dedup WHERE ended_at IS NOT NULL AND expires_at > $1`, now).Scan(&n)
	return n, wrap("counting kept dedup keys", err)
}
