package store

import (
	"context"
	"time"
)

// EnsurePartitions creates the monthly partitions of tasks.tasks and
// tasks.events for the month holding from and the next months-1 months, and
// returns how many it created. It serialises on an advisory lock inside the
// database, so any number of callers may race.
func (s *Store) EnsurePartitions(ctx context.Context, from time.Time, months int) (int, error) {
	const q = `SELECT tasks.ensure_partitions($1, $2)`
	var created int
	err := s.db.QueryRow(ctx, q, from, months).Scan(&created)
	return created, wrap("creating partitions", err)
}

// Partition describes one monthly partition.
type Partition struct {
	Table string    // e.g. tasks.tasks_p2026_11
	From  time.Time // inclusive
	To    time.Time // exclusive
}

// ListPartitions returns the partitions of parent ("tasks.tasks" or
// "tasks.events"), oldest first.
func (s *Store) ListPartitions(ctx context.Context, parent string) ([]Partition, error) {
	const q = `
SELECT c.oid::regclass::text,
       (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1]::timestamptz,
       (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = $1::regclass
ORDER BY 2`
	rows, err := s.db.Query(ctx, q, parent)
	if err != nil {
		return nil, wrap("listing partitions", err)
	}
	defer rows.Close()
	var out []Partition
	for rows.Next() {
		var p Partition
		if err := rows.Scan(&p.Table, &p.From, &p.To); err != nil {
			return nil, wrap("reading partitions", err)
		}
		out = append(out, p)
	}
	return out, wrap("listing partitions", rows.Err())
}
