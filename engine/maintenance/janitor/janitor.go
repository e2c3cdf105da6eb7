// Package janitor is the seed's global janitor: on dispatcher wake-ups, at
// most once per interval, it requeues (counting a retry) or dead-letters ACTIVE
// tasks whose lease expired because their instance died, and dead-letters
// tasks whose tenant no longer exists. Every instance runs one; SKIP LOCKED
// keeps two janitors off the same rows.
package janitor

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// Config configures a Janitor.
type Config struct {
	Store *store.Store
	// Interval throttles runs. Default 30s.
	Interval time.Duration
	// BatchSize bounds the rows one run touches per step. Default 500.
	BatchSize int
	// Backoff returns the retry delay policy of a task type (nil: the default).
	Backoff func(taskType string) func(int) time.Duration
	Clock   clock.Clock
	Logger  *slog.Logger
}

// Result says what one run changed.
type Result struct {
	Requeued     int
	DeadLettered int
	Orphaned     int
}

// Janitor recovers tasks from dead instances and deleted tenants.
type Janitor struct {
	cfg     Config
	mu      sync.Mutex
	lastRun time.Time
}

// New fills defaults and returns a Janitor.
func New(cfg Config) *Janitor {
	cfg.Interval = cmp.Or(cfg.Interval, 30*time.Second)
	cfg.BatchSize = cmp.Or(cfg.BatchSize, 500)
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Backoff == nil {
		cfg.Backoff = func(string) func(int) time.Duration { return execution.DefaultBackoff }
	}
	return &Janitor{cfg: cfg}
}

// MaybeRun runs once when the interval has passed since the last run (the
// throttle the seed describes) and returns whether it ran.
func (j *Janitor) MaybeRun(ctx context.Context) (bool, Result, error) {
	j.mu.Lock()
	now := j.cfg.Clock.Now()
	if !j.lastRun.IsZero() && now.Sub(j.lastRun) < j.cfg.Interval {
		j.mu.Unlock()
		return false, Result{}, nil
	}
	j.lastRun = now
	j.mu.Unlock()
	res, err := j.RunOnce(ctx)
	return true, res, err
}

// RunOnce rescues expired leases and dead-letters orphans now. It drains
// the expired leases batch after batch while a batch finds a full one: a
// task another transaction holds is skipped (SKIP LOCKED) and the rest go
// on; it stops when a batch finds fewer, or rescues none (every task it
// found is held), so held tasks never make it spin.
func (j *Janitor) RunOnce(ctx context.Context) (Result, error) {
	var res Result
	for {
		requeued, dead, found, err := j.rescueBatch(ctx)
		res.Requeued += requeued
		res.DeadLettered += dead
		if err != nil {
			return res, err
		}
		if found < j.cfg.BatchSize || requeued+dead == 0 {
			break
		}
	}
	orphans, err := j.cfg.Store.DeadLetterOrphans(ctx, j.cfg.BatchSize)
	res.Orphaned = orphans
	if err != nil {
		return res, err
	}
	if res != (Result{}) {
		j.cfg.Logger.Info("janitor recovered tasks", "requeued", res.Requeued, "dead_lettered", res.DeadLettered, "orphaned", res.Orphaned)
	}
	return res, nil
}

// rescueBatch requeues or dead-letters one batch of expired leases in one
// transaction. found is how many expired tasks it found, held ones
// included.
func (j *Janitor) rescueBatch(ctx context.Context) (requeued, dead, found int, err error) {
	dbNow := j.cfg.Clock.DBNow()
	var logged []loggedOutcome
	err = j.cfg.Store.InTx(ctx, func(tx *store.Store) error {
		logged = logged[:0]
		requeued, dead = 0, 0
		expired, n, err := tx.ExpiredLeases(ctx, dbNow, j.cfg.BatchSize)
		found = n
		if err != nil {
			return err
		}
		if len(expired) == 0 {
			return nil
		}
		outcomes := make([]store.Finish, 0, len(expired))
		for _, t := range expired {
			owner := ""
			if t.OwnerID != nil {
				owner = *t.OwnerID
			}
			msg := fmt.Sprintf("lease expired: instance %s stopped heartbeating (attempt %d)", owner, t.Attempts)
			o := store.Finish{ID: t.ID, Error: &msg, RetryCount: t.RetryCount}
			if t.RetryCount < t.MaxRetries {
				// A delay, added to the database's clock by the statement.
				o.Status, o.RetryCount, o.RetryIn = wftype.StatusPending, t.RetryCount+1, j.cfg.Backoff(t.TaskType)(t.RetryCount)
				requeued++
			} else {
				o.Status = wftype.StatusDeadLetter
				dead++
			}
			outcomes = append(outcomes, o)
		}
		// The rows are locked in this transaction since ExpiredLeases found
		// them expired by the database's clock: no need to test the lease
		// again, and testing it against this host's clock would skip every
		// task when the host's clock is behind.
		written, err := tx.FinishTasks(ctx, store.FinishParams{ExpiredBefore: dbNow, Now: dbNow}, outcomes)
		if err != nil {
			return err
		}
		done := make(map[uuid.UUID]bool, len(written))
		for _, id := range written {
			done[id] = true
		}
		for i := range expired {
			if done[expired[i].ID] {
				logged = append(logged, loggedOutcome{task: expired[i], outcome: outcomes[i]})
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, found, fmt.Errorf("error rescuing expired leases: %w", err)
	}
	// One line per task rescued, once the transaction committed.
	for i := range logged {
		execution.LogOutcome(ctx, j.cfg.Logger, &logged[i].task, logged[i].outcome, "reason", "lease expired", "janitor", true)
	}
	return requeued, dead, found, nil
}

// loggedOutcome is a rescued task and the outcome written for it.
type loggedOutcome struct {
	task    wftype.Task
	outcome store.Finish
}
