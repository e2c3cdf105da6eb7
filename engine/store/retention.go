package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrLockNotAvailable is returned when a partition drop did not get its
// table lock within the lock timeout: the table is busy, try again later.
var ErrLockNotAvailable = errors.New("lock not available")

// TaskCutoffs say which finished tasks retention may remove: a task whose
// finished_at (its creation time when it has none) is before the cutoff of
// its status. PENDING and ACTIVE tasks are never removed.
type TaskCutoffs struct {
	Completed  time.Time
	Failed     time.Time
	DeadLetter time.Time
	Cancelled  time.Time
}

// EventCutoffs say which events retention may remove: DEAD_LETTER events
// dead-lettered (created, when the time is missing) before DeadLetter.
// PENDING and PROCESSING events are never removed.
type EventCutoffs struct {
	DeadLetter time.Time
}

// expired clauses: a row of tasks.tasks ($3..$6) or tasks.events ($3) that
// retention may remove. Written so the partial indexes on status serve them.
const (
	taskExpiredSQL = `(
       (status = 'COMPLETED'   AND (finished_at < $3 OR (finished_at IS NULL AND "timestamp" < $3)))
    OR (status = 'FAILED'      AND (finished_at < $4 OR (finished_at IS NULL AND "timestamp" < $4)))
    OR (status = 'DEAD_LETTER' AND (finished_at < $5 OR (finished_at IS NULL AND "timestamp" < $5)))
    OR (status = 'CANCELLED'   AND (finished_at < $6 OR (finished_at IS NULL AND "timestamp" < $6))))`
	eventExpiredSQL = `(
    status = 'DEAD_LETTER' AND (dead_lettered_at < $3 OR (dead_lettered_at IS NULL AND created_at < $3)))`
)

// taskSurvivorsSQL: does the range [$1, $2) hold a task retention must keep?
// One EXISTS per status, each answered from an index.
const taskSurvivorsSQL = `
SELECT EXISTS (SELECT 1 FROM tasks.tasks WHERE "timestamp" >= $1 AND "timestamp" < $2 AND status = 'PENDING')
    OR EXISTS (SELECT 1 FROM tasks.tasks WHERE "timestamp" >= $1 AND "timestamp" < $2 AND status = 'ACTIVE')
    OR EXISTS (SELECT 1 FROM tasks.tasks WHERE "timestamp" >= $1 AND "timestamp" < $2 AND status = 'COMPLETED'
                 AND (finished_at >= $3 OR (finished_at IS NULL AND "timestamp" >= $3)))
    OR EXISTS (SELECT 1 FROM tasks.tasks WHERE "timestamp" >= $1 AND "timestamp" < $2 AND status = 'FAILED'
                 AND (finished_at >= $4 OR (finished_at IS NULL AND "timestamp" >= $4)))
    OR EXISTS (SELECT 1 FROM tasks.tasks WHERE "timestamp" >= $1 AND "timestamp" < $2 AND status = 'DEAD_LETTER'
                 AND (finished_at >= $5 OR (finished_at IS NULL AND "timestamp" >= $5)))
    OR EXISTS (SELECT 1 FROM tasks.tasks WHERE "timestamp" >= $1 AND "timestamp" < $2 AND status = 'CANCELLED'
                 AND (finished_at >= $6 OR (finished_at IS NULL AND "timestamp" >= $6)))`

// eventSurvivorsSQL: does the range [$1, $2) hold an event retention must keep?
const eventSurvivorsSQL = `
SELECT EXISTS (SELECT 1 FROM tasks.events WHERE created_at >= $1 AND created_at < $2 AND status = 'PENDING')
    OR EXISTS (SELECT 1 FROM tasks.events WHERE created_at >= $1 AND created_at < $2 AND status = 'PROCESSING')
    OR EXISTS (SELECT 1 FROM tasks.events WHERE created_at >= $1 AND created_at < $2 AND status = 'DEAD_LETTER'
                 AND (dead_lettered_at >= $3 OR (dead_lettered_at IS NULL AND created_at >= $3)))`

// deleteExpiredTasksSQL deletes up to $7 expired tasks of the range [$1, $2)
// (one partition). Rows are picked by ctid (a TID scan, not a scan of the
// partition per batch), and the expiry test is repeated on the target so
// that a row requeued meanwhile is left alone.
const deleteExpiredTasksSQL = `
DELETE FROM tasks.tasks
WHERE "timestamp" >= $1 AND "timestamp" < $2
  AND ctid = ANY (ARRAY(
      SELECT ctid FROM tasks.tasks
      WHERE "timestamp" >= $1 AND "timestamp" < $2 AND ` + taskExpiredSQL + `
      LIMIT $7))
  AND ` + taskExpiredSQL

// deleteExpiredEventsSQL is deleteExpiredTasksSQL for tasks.events ($4: limit).
const deleteExpiredEventsSQL = `
DELETE FROM tasks.events
WHERE created_at >= $1 AND created_at < $2
  AND ctid = ANY (ARRAY(
      SELECT ctid FROM tasks.events
      WHERE created_at >= $1 AND created_at < $2 AND ` + eventExpiredSQL + `
      LIMIT $4))
  AND ` + eventExpiredSQL

func (c TaskCutoffs) args() []any { return []any{c.Completed, c.Failed, c.DeadLetter, c.Cancelled} }

// EnsurePartitionsWithin is EnsurePartitions that gives up with
// ErrLockNotAvailable when the tables' locks are not granted within
// lockTimeout: creating a partition locks its parent exclusively, and a
// create waiting behind a long transaction would stall every statement
// queued behind it.
func (s *Store) EnsurePartitionsWithin(ctx context.Context, from time.Time, months int, lockTimeout time.Duration) (int, error) {
	var created int
	err := s.InTx(ctx, func(tx *Store) error {
		if err := tx.setLockTimeout(ctx, lockTimeout); err != nil {
			return err
		}
		var err error
		created, err = tx.EnsurePartitions(ctx, from, months)
		return err
	})
	if isLockNotAvailable(err) {
		return 0, fmt.Errorf("error creating partitions: %w", ErrLockNotAvailable)
	}
	return created, err
}

func (s *Store) setLockTimeout(ctx context.Context, d time.Duration) error {
	_, err := s.db.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", max(d.Milliseconds(), 1)))
	return wrap("setting the lock timeout", err)
}

func isLockNotAvailable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// HasTaskSurvivors reports whether the partition holds a task that retention
// must keep: a PENDING or ACTIVE one, or a finished one inside its window.
func (s *Store) HasTaskSurvivors(ctx context.Context, p Partition, c TaskCutoffs) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, taskSurvivorsSQL, append([]any{p.From, p.To}, c.args()...)...).Scan(&ok)
	return ok, wrap("looking for tasks to keep in "+p.Table, err)
}

// HasEventSurvivors reports whether the partition holds an event that
// retention must keep: a PENDING or PROCESSING one, or a dead letter inside
// its window.
func (s *Store) HasEventSurvivors(ctx context.Context, p Partition, c EventCutoffs) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, eventSurvivorsSQL, p.From, p.To, c.DeadLetter).Scan(&ok)
	return ok, wrap("looking for events to keep in "+p.Table, err)
}

// DeleteExpiredTasks deletes up to limit expired tasks of one partition and
// returns how many it deleted. Expired tasks are terminal, so they hold no
// dedup key: nothing else changes.
func (s *Store) DeleteExpiredTasks(ctx context.Context, p Partition, c TaskCutoffs, limit int) (int, error) {
	args := append([]any{p.From, p.To}, c.args()...)
	tag, err := s.db.Exec(ctx, deleteExpiredTasksSQL, append(args, limit)...)
	if err != nil {
		return 0, wrap("deleting expired tasks in "+p.Table, err)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteExpiredEvents deletes up to limit expired dead-letter events of one
// partition and returns how many it deleted.
func (s *Store) DeleteExpiredEvents(ctx context.Context, p Partition, c EventCutoffs, limit int) (int, error) {
	tag, err := s.db.Exec(ctx, deleteExpiredEventsSQL, p.From, p.To, c.DeadLetter, limit)
	if err != nil {
		return 0, wrap("deleting expired events in "+p.Table, err)
	}
	return int(tag.RowsAffected()), nil
}

// DropTaskPartition drops a partition of tasks.tasks when, checked under a
// lock that stops every change to the table, it holds no task to keep; it
// also removes the dedup rows that pointed into it (a dropped partition
// fires no trigger). It reports false, changing nothing, when the partition
// holds a task to keep (or is gone), and fails with ErrLockNotAvailable when
// the lock was not granted within lockTimeout (busy table: retry later).
func (s *Store) DropTaskPartition(ctx context.Context, p Partition, c TaskCutoffs, lockTimeout time.Duration) (bool, error) {
	return s.dropPartition(ctx, "tasks.tasks", p, lockTimeout,
		func(tx *Store) (bool, error) { return tx.HasTaskSurvivors(ctx, p, c) },
		`DELETE FROM tasks.task_dedup WHERE task_timestamp >= $1 AND task_timestamp < $2`)
}

// DropEventPartition is DropTaskPartition for tasks.events.
func (s *Store) DropEventPartition(ctx context.Context, p Partition, c EventCutoffs, lockTimeout time.Duration) (bool, error) {
	return s.dropPartition(ctx, "tasks.events", p, lockTimeout,
		func(tx *Store) (bool, error) { return tx.HasEventSurvivors(ctx, p, c) },
		`DELETE FROM tasks.event_dedup WHERE event_created_at >= $1 AND event_created_at < $2`)
}

// dropPartition drops partition p of parent in one transaction when keep,
// run under an ACCESS EXCLUSIVE lock on the parent, finds no row to keep;
// before the drop, deleteDedup (a statement over the partition's range, $1
// to $2) removes the dedup rows that point into it. The parent is locked
// first — the order every query takes — so the drop cannot deadlock with
// concurrent statements; DROP would take that lock anyway. The partition is
// looked up under that lock, so one dropped by another run meanwhile is
// reported not dropped rather than failing the DROP.
func (s *Store) dropPartition(ctx context.Context, parent string, p Partition, lockTimeout time.Duration,
	keep func(tx *Store) (bool, error), deleteDedup string) (bool, error) {
	dropped := false
	err := s.InTx(ctx, func(tx *Store) error {
		if err := tx.setLockTimeout(ctx, lockTimeout); err != nil {
			return err
		}
		if _, err := tx.db.Exec(ctx, "LOCK TABLE ONLY "+parent+" IN ACCESS EXCLUSIVE MODE"); err != nil {
			return wrap("locking "+parent, err)
		}
		// The name comes from the catalog: resolve it again, and make sure it
		// is a partition of parent, before it is spliced into DDL. Under the
		// parent's lock, which every drop of one of its partitions takes: a
		// partition found before the lock may have been dropped by another
		// maintenance run while this one waited for it.
		var name string
		err := tx.db.QueryRow(ctx, `
SELECT c.oid::regclass::text
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = $1::regclass AND c.oid = to_regclass($2)`, parent, p.Table).Scan(&name)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // dropped meanwhile
		}
		if err != nil {
			return wrap("resolving partition "+p.Table, err)
		}
		survivors, err := keep(tx)
		if err != nil || survivors {
			return err
		}
		if _, err := tx.db.Exec(ctx, deleteDedup, p.From, p.To); err != nil {
			return wrap("removing the dedup keys of "+p.Table, err)
		}
		if _, err := tx.db.Exec(ctx, "DROP TABLE "+name); err != nil {
			return wrap("dropping partition "+name, err)
		}
		dropped = true
		return nil
	})
	if isLockNotAvailable(err) {
		return false, fmt.Errorf("error dropping partition %s: %w", p.Table, ErrLockNotAvailable)
	}
	return dropped, err
}
