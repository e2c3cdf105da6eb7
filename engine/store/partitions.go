package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// How EnsureMonth waits for the lock that creating a partition needs.
const (
	monthLockTimeout = 500 * time.Millisecond // one attempt's wait
	monthAttempts    = 5
	monthFirstPause  = 100 * time.Millisecond // doubles after each attempt
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

// EnsurePartitionsSpan creates the monthly partitions of tasks.tasks and
// tasks.events for every month from the one holding oldest to the one
// holding newest (UTC, as the partitions are named), and returns how many
// it created. Code that writes rows at times it computes (seeds, fixtures,
// history for a benchmark) calls it with the oldest and newest of the very
// rows it is about to write, so no constant can drift from the rows.
//
//wf:dated
func (s *Store) EnsurePartitionsSpan(ctx context.Context, oldest, newest time.Time) (int, error) {
	if newest.Before(oldest) {
		oldest, newest = newest, oldest
	}
	return s.EnsurePartitions(ctx, oldest, monthKey(newest)-monthKey(oldest)+1)
}

// monthCache remembers the months whose partitions exist, by monthKey.
type monthCache struct {
	mu    sync.Mutex
	known map[int]bool
}

// EnsureMonths makes sure the partitions of the months holding times exist
// (EnsureMonth), once per process: a month seen before costs nothing. The
// client (tasks), the emitter (events) and the event consumer all go
// through it.
//
// A month not seen before is first looked up in the catalog on what the
// store runs on (the caller's transaction, if bound to one), which takes no
// lock: the partitions normally exist, created months ahead by maintenance.
// Only a month that must be created is created elsewhere, so the partition's
// lock is never held by the caller's transaction: on the pool, or, from
// inside a transaction, on a connection of its own. A transaction must not
// wait for a second connection of the pool: when the transactions waiting
// for its locks hold every other one, it would wait forever.
func (s *Store) EnsureMonths(ctx context.Context, times ...time.Time) error {
	var missing []time.Time
	seen := map[int]bool{}
	s.months.mu.Lock()
	for _, at := range times {
		key := monthKey(at)
		if !s.months.known[key] && !seen[key] {
			seen[key] = true
			missing = append(missing, at)
		}
	}
	s.months.mu.Unlock()
	for _, at := range missing {
		exists, err := s.monthExists(ctx, at)
		if err != nil {
			return err
		}
		if !exists {
			if err := s.createMonth(ctx, at); err != nil {
				return err
			}
		}
		s.months.mu.Lock()
		s.months.known[monthKey(at)] = true
		s.months.mu.Unlock()
	}
	return nil
}

// monthKey names the month holding at in the month cache: months since
// year 0, which costs a bulk enqueue nothing per task where a formatted
// "2006-01" cost a string each.
func monthKey(at time.Time) int {
	y, m, _ := at.UTC().Date()
	return y*12 + int(m) - 1
}

// monthExists reports whether the partitions of tasks.tasks and tasks.events
// for the month holding at (UTC, as tasks.ensure_partitions names them)
// exist, by their names in the catalog: no lock is taken.
func (s *Store) monthExists(ctx context.Context, at time.Time) (bool, error) {
	const q = `
SELECT to_regclass('tasks.tasks_p' || $1::text) IS NOT NULL
   AND to_regclass('tasks.events_p' || $1::text) IS NOT NULL`
	var ok bool
	err := s.db.QueryRow(ctx, q, at.UTC().Format("2006_01")).Scan(&ok)
	return ok, wrap("looking up the partitions of "+at.UTC().Format("2006-01"), err)
}

// createMonth runs EnsureMonth outside the caller's transaction: on the pool
// when the store is not bound to one, else on a connection of its own (see
// EnsureMonths).
func (s *Store) createMonth(ctx context.Context, at time.Time) error {
	pool, isPool := s.root.(*pgxpool.Pool)
	if !s.inTx || !isPool {
		root := &Store{db: s.root, channels: s.channels, root: s.root, months: s.months, plans: s.plans}
		return root.EnsureMonth(ctx, at)
	}
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("error connecting to create the partitions of %s: %w", at.UTC().Format("2006-01"), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	own := &Store{db: conn, channels: s.channels, root: conn, months: s.months, plans: s.plans}
	return own.EnsureMonth(ctx, at)
}

// EnsureMonth makes sure the partitions of the month holding at exist, for
// the write paths (enqueue, emit) that meet a month they have not seen. The
// partitions are normally created months ahead by maintenance, and then it
// only reads the catalog. When it must create one, it never lets the
// parent's exclusive lock queue behind a long transaction (every statement
// on the table would queue behind that wait): each attempt gives up after
// monthLockTimeout and is retried after a pause, monthAttempts in all, and
// then it fails with ErrLockNotAvailable.
func (s *Store) EnsureMonth(ctx context.Context, at time.Time) error {
	pause := monthFirstPause
	for attempt := 1; ; attempt++ {
		_, err := s.EnsurePartitionsWithin(ctx, at, 1, monthLockTimeout)
		if err == nil || !errors.Is(err, ErrLockNotAvailable) {
			return err
		}
		if attempt == monthAttempts {
			return fmt.Errorf("error creating the partitions of %s after %d attempts: %w", at.UTC().Format("2006-01"), attempt, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("error creating the partitions of %s: %w", at.UTC().Format("2006-01"), errors.Join(ctx.Err(), err))
		case <-time.After(pause):
		}
		pause *= 2
	}
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
	// A partition dropped while the statement runs (the drop commits
	// after its snapshot: another maintenance run's retention) is still
	// in pg_inherits, but pg_get_expr, which waits for the drop's lock,
	// then reads its bound as NULL: it is gone, and left out.
	const q = `
SELECT b.name,
       (regexp_match(b.bound, 'FROM \(''([^'']+)''\)'))[1]::timestamptz,
       (regexp_match(b.bound, 'TO \(''([^'']+)''\)'))[1]::timestamptz
FROM (SELECT c.oid::regclass::text AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass
      OFFSET 0) b
WHERE b.bound IS NOT NULL
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

// LockTasksBeforeEvents takes, as the first statement of a transaction that
// deletes or updates outbox rows (tasks.events) and then creates tasks, the
// lock that the tasks' insert needs on tasks.tasks. Every path that touches
// both tables then takes them in one order, tasks.tasks first: creating a
// month's partitions (ensure_partitions locks tasks.tasks, then
// tasks.events, exclusively) and finishing a task (its outbox rows in the
// same statement). Without it, an event batch holding its outbox rows and
// waiting to insert tasks deadlocks with a partition creation holding
// tasks.tasks and waiting for tasks.events. ONLY: the parent's lock is the
// one partition creation needs; the partitions are locked as the insert
// reaches them.
func (s *Store) LockTasksBeforeEvents(ctx context.Context) error {
	_, err := s.db.Exec(ctx, `LOCK TABLE ONLY tasks.tasks IN ROW EXCLUSIVE MODE`)
	return wrap("locking tasks.tasks before tasks.events", err)
}
