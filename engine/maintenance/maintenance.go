// Package maintenance is the leader's maintenance supervisor: every interval
// it creates the monthly partitions ahead of time, applies retention to
// tasks, events and fired schedule ticks, and deletes the rate windows that
// are over.
//
// # Retention without losing a live row
//
// Partitions are monthly by creation time, but what may be removed depends
// on each row's status and finish time: a PENDING or ACTIVE task may sit in
// an old partition, and a dead letter is kept 90 days when completed tasks
// go after 30. Rows cannot be moved out of their partition (the partition key
// is the time in their id), so "detach, copy the survivors, drop" would only
// rebuild the same partition. Instead, for each partition of a past month:
//
//  1. If it holds no survivor — no PENDING or ACTIVE task (no PENDING or
//     PROCESSING event), and no finished row inside its window — it is
//     dropped whole. The check is repeated inside the dropping transaction,
//     under an ACCESS EXCLUSIVE lock on the parent table (taken with a short
//     lock timeout, so a busy table defers the drop to the next run), so no
//     row can change between the check and the drop. The dedup rows that
//     pointed into it are deleted in the same transaction (a dropped
//     partition fires no trigger; only terminal rows were in it, so they
//     can only have been stale).
//  2. Otherwise its expired rows are deleted in batches (by ctid, with the
//     expiry test repeated on each row so one requeued meanwhile stays) and
//     the partition stays until a later run finds it droppable.
//
// The current month's partition is only ever trimmed (step 2), never
// dropped, and future partitions are not touched. Consumed events are
// deleted by the consumer when acknowledged; dead-letter events go by their
// dead-lettering time. Ticks of schedules older than the dead-letter window
// are pruned, keeping the latest of each schedule.
//
// # Rate windows
//
// The rows of tasks.rate_windows (a rate-limited type's, or one tenant's,
// starts in the current window) are deleted once their window is over, on
// the database's clock, the one claims count on (store.PruneRateWindows):
// a claim finding no row begins a fresh window, as it does over a row of an
// ended one, so no limit is lifted, and the rows of dropped catalogs, of
// types no longer limited and of tenants gone quiet do not pile up.
package maintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
)

// Retention windows: how long finished rows are kept.
type Retention struct {
	// Completed tasks (and CANCELLED ones). Default 30 days.
	Completed time.Duration
	// Failed tasks. Default 30 days.
	Failed time.Duration
	// DeadLetter tasks (and fired schedule ticks). Default 90 days.
	DeadLetter time.Duration
	// DeadLetterEvents are dead-letter events, by dead-lettering time.
	// Default 30 days.
	DeadLetterEvents time.Duration
}

// Config configures a Supervisor. Zero fields take the defaults noted.
type Config struct {
	Store *store.Store
	// Interval between runs. Default 1h.
	Interval time.Duration
	// PartitionsAhead is how many months after the current one have their
	// partitions created. Default 3.
	PartitionsAhead int
	Retention       Retention
	// BatchSize bounds the rows one delete statement removes. Default 5000.
	BatchSize int
	// LockTimeout bounds the wait for the table lock a partition drop needs.
	// Default 3s.
	LockTimeout time.Duration
	Clock       clock.Clock
	Logger      *slog.Logger
}

// Result says what one run changed.
type Result struct {
	PartitionsCreated int
	// Dropped names the partitions dropped whole.
	Dropped []string
	// Deferred names droppable partitions whose drop gave up waiting for a
	// busy table (LockTimeout); the next run drops them.
	Deferred     []string
	TasksDeleted int
	// EventsDeleted counts dead-letter events deleted row by row.
	EventsDeleted int
	TicksDeleted  int
	// RemoteRunsPurged counts the records of remote runs whose claim ended
	// without their worker finishing the task.
	RemoteRunsPurged int
	// InboxDeleted counts the records of pushed messages (tasks.inbox_messages)
	// older than InboxWindow deleted.
	InboxDeleted int64
	// WorkflowRunsDeleted counts the finished workflow runs deleted (with
	// their step rows), by the tasks' windows for their status.
	WorkflowRunsDeleted int64
	// RateWindowsDeleted counts the rows of tasks.rate_windows deleted
	// because their window was over (store.PruneRateWindows).
	RateWindowsDeleted int64
	// DedupKeysDeleted counts the dedup keys of ended tasks deleted because
	// their task type's unique period was over (store.DeleteStaleDedupKeys).
	DedupKeysDeleted int64
}

// InboxWindow is how long the id of a message pushed to wf is remembered
// (tasks.inbox_messages), so that its redelivery writes nothing: longer
// than Pub/Sub keeps an unacknowledged message (at most 31 days).
const InboxWindow = 32 * 24 * time.Hour

func (r Result) changed() bool {
	return r.PartitionsCreated > 0 || len(r.Dropped) > 0 || len(r.Deferred) > 0 ||
		r.TasksDeleted > 0 || r.EventsDeleted > 0 || r.TicksDeleted > 0 || r.RemoteRunsPurged > 0 || r.InboxDeleted > 0 ||
		r.WorkflowRunsDeleted > 0 || r.RateWindowsDeleted > 0 || r.DedupKeysDeleted > 0
}

// Supervisor runs maintenance on the leader.
type Supervisor struct {
	cfg Config
	log *slog.Logger
}

// New fills defaults, validates cfg and returns a Supervisor.
func New(cfg Config) (*Supervisor, error) {
	if cfg.Store == nil {
		return nil, errors.New("error creating maintenance supervisor: no store")
	}
	const day = 24 * time.Hour
	cfg.Interval = cmp.Or(cfg.Interval, time.Hour)
	cfg.PartitionsAhead = cmp.Or(cfg.PartitionsAhead, 3)
	cfg.Retention.Completed = cmp.Or(cfg.Retention.Completed, 30*day)
	cfg.Retention.Failed = cmp.Or(cfg.Retention.Failed, 30*day)
	cfg.Retention.DeadLetter = cmp.Or(cfg.Retention.DeadLetter, 90*day)
	cfg.Retention.DeadLetterEvents = cmp.Or(cfg.Retention.DeadLetterEvents, 30*day)
	cfg.BatchSize = cmp.Or(cfg.BatchSize, 5000)
	cfg.LockTimeout = cmp.Or(cfg.LockTimeout, 3*time.Second)
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	r := cfg.Retention
	if cfg.Interval <= 0 || cfg.PartitionsAhead < 0 || cfg.BatchSize < 1 || cfg.LockTimeout <= 0 ||
		r.Completed <= 0 || r.Failed <= 0 || r.DeadLetter <= 0 || r.DeadLetterEvents <= 0 {
		return nil, fmt.Errorf("error creating maintenance supervisor: intervals, windows and sizes must be positive (got %+v)", cfg)
	}
	return &Supervisor{cfg: cfg, log: cfg.Logger.With("component", "maintenance")}, nil
}

// Run runs maintenance at once and then every Interval until ctx ends
// (leadership lost or shutdown). It is an engine leader service.
func (s *Supervisor) Run(ctx context.Context) {
	clock.Repeat(ctx, s.cfg.Clock, s.cfg.Interval, s.log, "maintenance run failed; retrying at the next interval", func(now time.Time) error {
		_, err := s.RunOnce(ctx, now)
		return err
	})
}

// monthStart is the first instant of t's month, in UTC (partitions are
// monthly in UTC).
func monthStart(t time.Time) time.Time {
	u := t.UTC()
	return time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// RunOnce runs maintenance once as of now: partitions ahead, then retention
// of tasks, events, schedule ticks, pushed message ids and finished
// workflow runs and the dedup keys whose unique period is over, then the
// rate windows that are over, which go by the
// clock claims count on (Clock.DBNow: the database's with the real clock),
// not by now.
func (s *Supervisor) RunOnce(ctx context.Context, now time.Time) (Result, error) {
	var res Result
	created, err := s.cfg.Store.EnsurePartitionsWithin(ctx, now, s.cfg.PartitionsAhead+1, s.cfg.LockTimeout)
	switch {
	case errors.Is(err, store.ErrLockNotAvailable):
		// Months ahead: the next run creates them.
		s.log.Warn("creating partitions ahead waited too long for a busy table; retrying at the next run")
	case err != nil:
		return res, err
	}
	res.PartitionsCreated = created
	r := s.cfg.Retention
	taskCut := store.TaskCutoffs{
		Completed: now.Add(-r.Completed), Failed: now.Add(-r.Failed),
		DeadLetter: now.Add(-r.DeadLetter), Cancelled: now.Add(-r.Completed),
	}
	if err := s.retainTasks(ctx, now, taskCut, &res); err != nil {
		return res, err
	}
	eventCut := store.EventCutoffs{DeadLetter: now.Add(-r.DeadLetterEvents)}
	if err := s.retainEvents(ctx, now, eventCut, &res); err != nil {
		return res, err
	}
	ticks, err := s.cfg.Store.PruneTicks(ctx, now.Add(-r.DeadLetter))
	if err != nil {
		return res, err
	}
	res.TicksDeleted = ticks
	purged, err := s.cfg.Store.PurgeRemoteRuns(ctx)
	if err != nil {
		return res, err
	}
	res.RemoteRunsPurged = int(purged)
	if res.InboxDeleted, err = s.inBatches(func() (int64, error) {
		return s.cfg.Store.PurgeInboxMessages(ctx, now.Add(-InboxWindow), s.cfg.BatchSize)
	}); err != nil {
		return res, err
	}
	if res.WorkflowRunsDeleted, err = s.inBatches(func() (int64, error) {
		return s.cfg.Store.DeleteFinishedWorkflowRuns(ctx, taskCut, s.cfg.BatchSize)
	}); err != nil {
		return res, err
	}
	if res.DedupKeysDeleted, err = s.inBatches(func() (int64, error) {
		return s.cfg.Store.DeleteStaleDedupKeys(ctx, now, s.cfg.BatchSize)
	}); err != nil {
		return res, err
	}
	dbNow := s.cfg.Clock.DBNow()
	if res.RateWindowsDeleted, err = s.inBatches(func() (int64, error) {
		return s.cfg.Store.PruneRateWindows(ctx, dbNow, s.cfg.BatchSize)
	}); err != nil {
		return res, err
	}
	if res.changed() {
		s.log.Info("maintenance", "partitions_created", res.PartitionsCreated, "dropped", res.Dropped,
			"deferred", res.Deferred, "tasks_deleted", res.TasksDeleted, "events_deleted", res.EventsDeleted,
			"ticks_deleted", res.TicksDeleted, "remote_runs_purged", res.RemoteRunsPurged, "inbox_deleted", res.InboxDeleted,
			"workflow_runs_deleted", res.WorkflowRunsDeleted, "rate_windows_deleted", res.RateWindowsDeleted,
			"dedup_keys_deleted", res.DedupKeysDeleted)
	}
	return res, nil
}

// inBatches calls deleteBatch, a delete of up to BatchSize rows, until one
// deletes fewer, and returns how many rows they deleted in all.
func (s *Supervisor) inBatches(deleteBatch func() (int64, error)) (int64, error) {
	var total int64
	for {
		n, err := deleteBatch()
		total += n
		if err != nil || n < int64(s.cfg.BatchSize) {
			return total, err
		}
	}
}

// partitionRetention is the table-specific part of retention.
type partitionRetention struct {
	parent string
	// newest is the latest cutoff: a partition starting at or after it
	// holds nothing expired.
	newest  time.Time
	keep    func(store.Partition) (bool, error)
	drop    func(store.Partition) (bool, error)
	delete  func(store.Partition) (int, error)
	deleted *int
}

func (s *Supervisor) retainTasks(ctx context.Context, now time.Time, c store.TaskCutoffs, res *Result) error {
	st := s.cfg.Store
	newest := c.Completed
	for _, t := range []time.Time{c.Failed, c.DeadLetter, c.Cancelled} {
		if t.After(newest) {
			newest = t
		}
	}
	return s.retain(ctx, now, res, partitionRetention{
		parent: "tasks.tasks", newest: newest, deleted: &res.TasksDeleted,
		keep:   func(p store.Partition) (bool, error) { return st.HasTaskSurvivors(ctx, p, c) },
		drop:   func(p store.Partition) (bool, error) { return st.DropTaskPartition(ctx, p, c, s.cfg.LockTimeout) },
		delete: func(p store.Partition) (int, error) { return st.DeleteExpiredTasks(ctx, p, c, s.cfg.BatchSize) },
	})
}

func (s *Supervisor) retainEvents(ctx context.Context, now time.Time, c store.EventCutoffs, res *Result) error {
	st := s.cfg.Store
	return s.retain(ctx, now, res, partitionRetention{
		parent: "tasks.events", newest: c.DeadLetter, deleted: &res.EventsDeleted,
		keep:   func(p store.Partition) (bool, error) { return st.HasEventSurvivors(ctx, p, c) },
		drop:   func(p store.Partition) (bool, error) { return st.DropEventPartition(ctx, p, c, s.cfg.LockTimeout) },
		delete: func(p store.Partition) (int, error) { return st.DeleteExpiredEvents(ctx, p, c, s.cfg.BatchSize) },
	})
}

// retain applies retention to the partitions of one table: drop past ones
// that hold nothing to keep, trim the others.
func (s *Supervisor) retain(ctx context.Context, now time.Time, res *Result, pr partitionRetention) error {
	parts, err := s.cfg.Store.ListPartitions(ctx, pr.parent)
	if err != nil {
		return err
	}
	current := monthStart(now)
	for _, p := range parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !p.From.Before(pr.newest) || p.From.After(current) {
			continue // nothing in it can have expired, or a future month
		}
		if !p.To.After(current) { // a past month: drop it when nothing in it must stay
			keep, err := pr.keep(p) // without a lock first: most runs keep most partitions
			if err != nil {
				return err
			}
			if !keep {
				dropped, err := pr.drop(p) // checks again under the lock
				switch {
				case errors.Is(err, store.ErrLockNotAvailable):
					res.Deferred = append(res.Deferred, p.Table)
					continue
				case err != nil:
					return err
				case dropped:
					res.Dropped = append(res.Dropped, p.Table)
					continue
				}
			}
		}
		for {
			n, err := pr.delete(p)
			if err != nil {
				return err
			}
			*pr.deleted += n
			if n < s.cfg.BatchSize {
				break
			}
		}
	}
	return nil
}
