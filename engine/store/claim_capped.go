package store

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Global concurrency limits (concurrency.global: at most N tasks of a type
// ACTIVE across every instance) are exact: a claim that includes a capped
// type counts the type's ACTIVE tasks and claims at most the room left in
// one transaction that first takes the type's transaction-scoped advisory
// lock. Claimers of one capped type therefore take turns, and under READ
// COMMITTED (PostgreSQL's default, which the claim relies on) the counting
// statement, which starts once the lock is held, sees every claim committed
// before it. Claims without a capped type take no lock (claimTasksSQL).
//
// The lock and the claim are two statements sent together in one pipeline
// ending in one Sync, which PostgreSQL runs as one implicit transaction:
// the claim costs one round trip, as an uncapped one does. Inside a
// caller's transaction they run in it, and the locks last until it ends.

// typeLockKey is the key of the advisory lock of the task type in column
// (or expression) col: every writer of a limited type's counts (a claim,
// StartSync) holds it, and PruneRateWindows tries it.
func typeLockKey(col string) string { return `hashtextextended('wf:global:' || ` + col + `, 0)` }

// globalLockSQL takes the advisory lock of each task type of $1, in the
// order of the keys, so that claimers of overlapping sets of types never
// wait on each other in a cycle (the keys, not the names, set the order: two
// names may share a key). The sorted, distinct sub-select is not flattened,
// so the locks are taken in its order.
var globalLockSQL = `
SELECT count(pg_advisory_xact_lock(keys.k))
FROM (
    SELECT DISTINCT ` + typeLockKey("u.task_type") + ` AS k
    FROM unnest($1::text[]) AS u(task_type)
    ORDER BY k
) keys`

// claimCappedSQL is claimTasksSQL for a claim that includes globally capped
// types: $8 and $9 are the capped types and their caps. Run after
// globalLockSQL in the same transaction, it counts each capped type's
// ACTIVE tasks and takes at most the room left: each pair reads at most its
// type's room, and pairs of one type (its two execution modes) share it.
// Each claimed row carries its type's room (NULL when uncapped) after the
// task's columns.
const claimCappedSQL = claimSlotsSQL + `,
room AS (
    SELECT c.task_type, c.global_cap - (
               SELECT count(*) FROM tasks.tasks a
               WHERE a.status = 'ACTIVE' AND a.task_type = c.task_type
           )::int AS room
    FROM unnest((SELECT $8::text[]), (SELECT $9::int[])) AS c(task_type, global_cap)
),
locked AS (
    SELECT c.task_id, c."timestamp", c.task_type, c.priority, c.run_after
    FROM slots s
    LEFT JOIN room r ON r.task_type = s.task_type
    CROSS JOIN LATERAL (
        SELECT t.task_id, t."timestamp", t.task_type, t.priority, t.run_after
        ` + dueOfSlotSQL + `
        ` + claimOrderSQL + `
        LIMIT greatest(least(s.max_claim, coalesce(r.room, s.max_claim)), 0)
        FOR UPDATE SKIP LOCKED
    ) c
),
candidates AS (
    SELECT l.task_id, l."timestamp"
    FROM (
        SELECT l.*, row_number() OVER (PARTITION BY l.task_type
                                       ORDER BY l.priority DESC, l.run_after, l.task_id) AS nth
        FROM locked l
    ) l
    LEFT JOIN room r ON r.task_type = l.task_type
    WHERE r.room IS NULL OR l.nth <= r.room
    ORDER BY l.priority DESC, l.run_after, l.task_id
    LIMIT (SELECT $5::int)
)` + claimUpdateSQL + `
RETURNING ` + taskColumnsT + `, (SELECT r.room FROM room r WHERE r.task_type = t.task_type)`

// ClaimCappedSQL returns the statements of a claim that includes globally
// capped types, the lock then the claim, for EXPLAIN in tests.
func ClaimCappedSQL() (lock, claim string) { return globalLockSQL, claimCappedSQL }

// globalCaps returns, sorted, the capped task types p may claim and their
// caps.
func globalCaps(p ClaimParams) ([]string, []int32) {
	var types []string
	for _, sl := range p.Slots {
		if sl.Max > 0 && p.Global[sl.TaskType] > 0 && !slices.Contains(types, sl.TaskType) {
			types = append(types, sl.TaskType)
		}
	}
	slices.Sort(types)
	caps := make([]int32, len(types))
	for i, tt := range types {
		caps[i] = int32(p.Global[tt])
	}
	return types, caps
}

// batcher is what sends a pipeline: a pool, a connection or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// claimCapped takes the advisory locks of the capped types and claims with
// claimCappedSQL, in one round trip and one transaction.
func (s *Store) claimCapped(ctx context.Context, args []any, types []string, caps []int32) (Claimed, error) {
	return s.claimLocked(ctx, "claiming tasks under global limits", claimCappedSQL, types, false, append(args, types, caps)...)
}

// claimLocked takes the advisory locks of types (globalLockSQL) and runs
// the claim statement sql, whose rows are a task and its type's room (and,
// when fair, the census columns: fairCensusColumns), in one round trip and
// one transaction.
func (s *Store) claimLocked(ctx context.Context, doing, sql string, types []string, fair bool, args ...any) (Claimed, error) {
	var c Claimed
	err := s.withPlanGuard(ctx, func(db DBTX) (int, error) {
		b := &pgx.Batch{}
		b.Queue(globalLockSQL, types)
		b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
			var err error
			c, err = collectCapped(rows, fair)
			return err
		})
		send := func(db batcher) error { return db.SendBatch(ctx, b).Close() }
		var err error
		if bdb, ok := db.(batcher); ok {
			err = send(bdb)
		} else { // a DBTX that cannot pipeline: the same, in a transaction of its own
			err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return send(tx) })
		}
		return len(c.Tasks), wrap(doing, err)
	})
	if err != nil {
		return Claimed{}, err
	}
	return c, nil
}

// collectCapped reads the rows of claimCappedSQL (a task and its type's
// room) or, fair, of claimLimitedSQL (and the census columns).
func collectCapped(rows pgx.Rows, fair bool) (Claimed, error) {
	defer rows.Close()
	var c Claimed
	var room *int32
	var one, scanEnd *string
	var leftOut *bool
	extra := []any{&room}
	if fair {
		extra = append(extra, &one, &scanEnd, &leftOut)
	}
	sc := newTaskScanner(extra...)
	for rows.Next() {
		t, err := sc.scan(rows)
		if err != nil {
			return Claimed{}, err
		}
		c.Tasks = append(c.Tasks, t)
		if fair {
			addCensus(&c, &t, one, scanEnd, leftOut)
		}
		if room != nil {
			if c.Room == nil {
				c.Room = map[string]int{}
			}
			c.Room[t.TaskType] = int(*room)
		}
	}
	return c, rows.Err()
}

// leading is a row whose first columns, before those its reader scans, go
// to first.
type leading struct {
	row   pgx.Row
	first []any
}

// Scan scans the row into first and then dest.
func (r leading) Scan(dest ...any) error {
	return r.row.Scan(append(append([]any(nil), r.first...), dest...)...)
}
