package maintenance_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/maintenance"
	"github.com/wfhq/wf/engine/store"
)

// TestSnapshotterRefreshesOnItsClock: the snapshotter writes the PENDING
// counts at once and again each time its clock passes the interval, as of
// the clock's time; the overview reads them (without refreshing: the
// snapshot is fresh) with that time.
func TestSnapshotterRefreshesOnItsClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := maintenance.NewSnapshotter(maintenance.SnapshotConfig{})
	require.Error(t, err)
	_, err = maintenance.NewSnapshotter(maintenance.SnapshotConfig{Store: b.store, Interval: -time.Second})
	require.Error(t, err)

	start := clock.Now().UTC().Truncate(time.Millisecond)
	fake := clock.NewFake(start)
	snap, err := maintenance.NewSnapshotter(maintenance.SnapshotConfig{Store: b.store, Interval: 5 * time.Second, Clock: fake,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	b.ensurePartitions(t, start.AddDate(0, -1, 0), 3)
	b.addTasks(t, start, "PENDING", []int{1}, 4, "")

	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); snap.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// read waits until the snapshot is as of at, and returns its PENDING count.
	read := func(at time.Time) int64 {
		t.Helper()
		for {
			o, err := b.store.ReadOverview(ctx, store.OverviewParams{Now: &at, PendingMaxAge: time.Hour})
			require.NoError(t, err)
			if o.PendingAsOf.Equal(at) {
				var n int64
				for _, c := range o.Counts {
					if c.Status == "PENDING" {
						n += c.Count
					}
				}
				return n
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the snapshot never reached %s (last %s)", at, o.PendingAsOf)
			case <-time.After(20 * time.Millisecond): // polls the database the snapshotter writes to
			}
		}
	}
	require.Equal(t, int64(4), read(start))
	b.addTasks(t, start, "PENDING", []int{2}, 3, "")
	require.NoError(t, fake.AwaitWaiters(ctx, 1))
	fake.Advance(5 * time.Second)
	require.Equal(t, int64(7), read(start.Add(5*time.Second)))
}
