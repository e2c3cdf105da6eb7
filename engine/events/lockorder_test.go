package events_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
)

// isDeadlock reports whether err is PostgreSQL's deadlock_detected.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

// TestPartitionMaintenanceBesideConsumers: three consumers work through
// 1,000 events in batches of 5 (each batch deletes outbox rows, then creates
// tasks, in one transaction) while maintenance creates partitions, month
// after month, as fast as it can (each creation locks tasks.tasks, then
// tasks.events, exclusively). Both take the tables in one order, so neither
// deadlocks: no statement fails with "deadlock detected", no event spends
// an attempt on it, and every event is consumed once.
func TestPartitionMaintenanceBesideConsumers(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	const n = 1000
	for i := 0; i < n; i += 500 {
		b.emitItems(t, i, 500)
	}
	// The client learns that this month's partitions exist before
	// maintenance starts: its check would otherwise queue behind the
	// partition creations (their advisory lock) and time out.
	_, err := b.client.Enqueue(b.ctx, client.Request{TaskType: "audit"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var failures []error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, err)
	}
	var consumersLeft atomic.Int32
	consumersLeft.Store(3)
	maintenanceDone := make(chan struct{})
	created := 0
	go func() {
		defer close(maintenanceDone)
		// Months far ahead, each new: every call creates two partitions.
		month := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
		for consumersLeft.Load() > 0 && ctx.Err() == nil {
			c, err := b.store.EnsurePartitionsWithin(ctx, month, 1, 10*time.Second)
			if err != nil {
				fail(err)
				return
			}
			created += c
			month = month.AddDate(0, 1, 0)
		}
	}()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer consumersLeft.Add(-1)
			c := b.consumer(t, "c"+string(rune('1'+i)), clock.Real{}, func(cfg *events.ConsumerConfig) { cfg.BatchSize = 5 })
			for ctx.Err() == nil {
				res, err := c.RunOnce(ctx)
				if err != nil {
					fail(err)
					continue
				}
				if res.Claimed == 0 && b.count(t, `SELECT count(*) FROM tasks.events`) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	<-maintenanceDone
	for _, err := range failures {
		require.False(t, isDeadlock(err), "deadlock: %v", err)
	}
	require.Empty(t, failures)
	require.Positive(t, created)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM tasks.events`))
	require.Equal(t, n, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'on_item'`))
	t.Logf("%d partitions created beside the consumers", created)
}
