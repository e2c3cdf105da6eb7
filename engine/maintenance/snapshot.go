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

// DefaultSnapshotInterval is how often the leader refreshes the PENDING
// counts snapshot the overview reads.
const DefaultSnapshotInterval = 5 * time.Second

// SnapshotConfig configures a Snapshotter. Zero fields take the defaults
// noted.
type SnapshotConfig struct {
	Store *store.Store
	// Interval between refreshes. Default DefaultSnapshotInterval; keep it
	// under store.DefaultPendingSnapshotMaxAge, or readers refresh too.
	Interval time.Duration
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Snapshotter refreshes, on the leader, the snapshot of the PENDING counts
// by task type and tenant (tasks.pending_snapshot) that the dashboard's
// overview, `wf tasks stats` and the queue gauges read: one statement every
// Interval, so reading the counts costs one row whatever the backlog.
type Snapshotter struct {
	cfg SnapshotConfig
	log *slog.Logger
}

// NewSnapshotter fills defaults, validates cfg and returns a Snapshotter.
func NewSnapshotter(cfg SnapshotConfig) (*Snapshotter, error) {
	if cfg.Store == nil {
		return nil, errors.New("error creating the PENDING counts snapshotter: no store")
	}
	cfg.Interval = cmp.Or(cfg.Interval, DefaultSnapshotInterval)
	if cfg.Interval <= 0 {
		return nil, fmt.Errorf("error creating the PENDING counts snapshotter: interval must be positive (got %s)", cfg.Interval)
	}
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return &Snapshotter{cfg: cfg, log: cfg.Logger.With("component", "pending snapshot")}, nil
}

// Run refreshes the snapshot at once and then every Interval until ctx ends
// (leadership lost or shutdown). It is an engine leader service. A failed
// refresh is logged once until one succeeds again (readers refresh a stale
// snapshot themselves meanwhile).
func (s *Snapshotter) Run(ctx context.Context) {
	failing := false
	run := func() bool {
		_, err := s.RunOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			s.log.Warn("refreshing the PENDING counts snapshot failed; retrying every interval", "err", err)
			failing = true
		case err == nil && failing:
			s.log.Info("refreshing the PENDING counts snapshot works again")
			failing = false
		}
		return true
	}
	run()
	clock.Every(ctx, s.cfg.Clock, s.cfg.Interval, run)
}

// RunOnce refreshes the snapshot as of the clock (the database's with the
// real clock) and returns its time.
func (s *Snapshotter) RunOnce(ctx context.Context) (time.Time, error) {
	return s.cfg.Store.RefreshPendingSnapshot(ctx, s.cfg.Clock.DBNow())
}
