package store

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// QueueDepth is how many tasks of one type are in one live status.
type QueueDepth struct {
	TaskType string
	Status   wftype.TaskStatus
	Count    int64
}

// queueDepthSQL counts the live tasks (PENDING and ACTIVE) by type. Each
// branch reads only its partial index (tasks_claim_idx for PENDING, whose
// leading column is task_type; tasks_active_lease_idx for ACTIVE), so the cost
// grows with the number of live tasks, never with the finished rows that make
// up most of the table (see TestQueueDepthReadsPartialIndexes). The statuses
// are literals, not parameters, so the planner can match the index predicates.
const queueDepthSQL = `
SELECT task_type, 'PENDING' AS status, count(*) FROM tasks.tasks WHERE status = 'PENDING' GROUP BY task_type
UNION ALL
SELECT task_type, 'ACTIVE' AS status, count(*) FROM tasks.tasks WHERE status = 'ACTIVE' GROUP BY task_type`

// QueueDepthSQL returns the queue depth statement, for EXPLAIN in tests.
func QueueDepthSQL() string { return queueDepthSQL }

// QueueDepths counts PENDING and ACTIVE tasks by type from the partial
// indexes on live rows. The statement runs in its own transaction with
// statement_timeout set to limit, so a runaway backlog makes the call fail
// fast rather than load the database.
func (s *Store) QueueDepths(ctx context.Context, limit time.Duration) ([]QueueDepth, error) {
	var out []QueueDepth
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		ms := strconv.FormatInt(max(limit.Milliseconds(), 1), 10)
		if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true)`, ms); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, queueDepthSQL)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d QueueDepth
			var status string
			if err := rows.Scan(&d.TaskType, &status, &d.Count); err != nil {
				return err
			}
			d.Status = wftype.TaskStatus(status)
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, wrap("counting queue depth", err)
}

// EstimateTaskRows estimates how many rows of tasks.tasks are in each status
// from the planner's statistics alone: for each partition, its row estimate
// (pg_class.reltuples) times the frequency of each status in its most-common
// values (pg_stats). It reads catalogs only — no table or index — so it costs
// the same on a table of any size, and it is as fresh as the last
// (auto)ANALYZE of each partition. Partitions never analysed count as empty.
func (s *Store) EstimateTaskRows(ctx context.Context) (map[wftype.TaskStatus]float64, error) {
	const q = `
SELECT v.status, sum(c.reltuples * v.freq)::float8
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'status' AND NOT s.inherited
CROSS JOIN LATERAL unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS v(status, freq)
WHERE i.inhparent = 'tasks.tasks'::regclass AND c.reltuples > 0
GROUP BY v.status`
	return queryMap[wftype.TaskStatus, float64](ctx, s.db, "estimating task rows", q)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return wrap("pinging the database", s.db.QueryRow(ctx, `SELECT 1`).Scan(&one))
}
