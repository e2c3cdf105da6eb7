// Package readreplica decides, read by read, whether a read that may lag
// goes to a read replica (database.read_url) or to the primary.
//
// A Monitor samples, every interval, the primary's write-ahead log position
// and the replica's replay position. The replica's lag is how long ago the
// primary was at the position the replica has replayed up to: 0 when the
// replica has replayed everything the primary had written at the last
// sample, else the age of the newest sample at or before the replayed
// position (so within one interval of the truth, on the late side). (A time-stamp lag, now() - pg_last_xact_replay_timestamp(),
// would grow on an idle primary that writes nothing; positions do not.)
//
// Reads go to the replica while its lag, measured within the last few
// intervals, is at most MaxLag; otherwise — the replica lags more,
// cannot be reached, is not a standby, or has not been measured yet — they
// go to the primary. Which reads may lag at all is the caller's decision
// (the HTTP API's lists and overview may; a task read by id, a wait, and
// every read before a write may not).
package readreplica

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
)

// Defaults.
const (
	// DefaultMaxLag is how far behind the replica may be and still serve reads.
	DefaultMaxLag = 5 * time.Second
	// DefaultInterval is how often the lag is measured.
	DefaultInterval = 500 * time.Millisecond
)

// Source names where a read was served from.
type Source string

// Sources.
const (
	FromPrimary Source = "primary"
	FromReplica Source = "replica"
)

// Config configures a Monitor. Zero fields take the defaults noted.
type Config struct {
	// Primary and Replica are the stores of the primary and of its
	// streaming standby. Required.
	Primary, Replica *store.Store
	// MaxLag: reads go to the replica only while it lags at most this
	// much. Default DefaultMaxLag.
	MaxLag time.Duration
	// Interval between two measures. Default DefaultInterval.
	Interval time.Duration
	Clock    clock.Clock
	Logger   *slog.Logger
}

// sample is the primary's position at a time.
type sample struct {
	at  time.Time
	lsn uint64
}

// Monitor measures the replica's lag and routes reads. It is safe for
// concurrent use.
type Monitor struct {
	cfg Config

	mu       sync.Mutex
	samples  []sample // oldest first, at most keep
	lag      time.Duration
	measured time.Time // when lag was last measured; zero: never
	fresh    bool      // the last measure found the replica usable
}

// New checks cfg and returns a Monitor that has measured nothing yet (reads
// go to the primary until its first measure).
func New(cfg Config) (*Monitor, error) {
	if cfg.Primary == nil || cfg.Replica == nil {
		return nil, errors.New("error creating the read replica monitor: Primary and Replica are required")
	}
	cfg.MaxLag = cmp.Or(cfg.MaxLag, DefaultMaxLag)
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return &Monitor{cfg: cfg}, nil
}

// keep is how many samples are kept: enough to date a lag up to twice
// MaxLag (a longer one is too long anyway).
func (m *Monitor) keep() int { return int(2*m.cfg.MaxLag/m.cfg.Interval) + 2 }

// RunOnce measures the lag once and returns it, or the error that made the
// replica unusable.
func (m *Monitor) RunOnce(ctx context.Context) (time.Duration, error) {
	now := m.cfg.Clock.Now()
	p, err := m.cfg.Primary.WALPosition(ctx)
	if err != nil {
		m.set(now, 0, false)
		return 0, err
	}
	m.mu.Lock()
	m.samples = append(m.samples, sample{at: now, lsn: p})
	if n := len(m.samples) - m.keep(); n > 0 {
		m.samples = append(m.samples[:0], m.samples[n:]...)
	}
	m.mu.Unlock()
	r, standby, err := m.cfg.Replica.ReplayPosition(ctx)
	if err == nil && !standby {
		err = errors.New("the read replica (database.read_url) is not a standby: it is in no recovery")
	}
	if err != nil {
		m.set(now, 0, false)
		return 0, err
	}
	lag := m.lagAt(now, r)
	m.set(now, lag, lag <= m.cfg.MaxLag)
	return lag, nil
}

// lagAt dates the replayed position r against the samples.
func (m *Monitor) lagAt(now time.Time, r uint64) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.samples) - 1; i >= 0; i-- {
		if m.samples[i].lsn <= r {
			if i == len(m.samples)-1 {
				return 0 // caught up with the latest sample
			}
			// Past sample i, not i+1: what it lacks was written after
			// sample i (counted from there, to err on the late side).
			return now.Sub(m.samples[i].at)
		}
	}
	// Behind every sample kept: at least as old as the oldest.
	return now.Sub(m.samples[0].at)
}

func (m *Monitor) set(now time.Time, lag time.Duration, fresh bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lag, m.measured, m.fresh = lag, now, fresh
}

// Lag returns the replica's last measured lag, and false when it is not
// usable (never measured, unreachable, not a standby, or measured too long
// ago).
func (m *Monitor) Lag() (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ok := m.fresh && !m.measured.IsZero() && m.cfg.Clock.Now().Sub(m.measured) <= 3*m.cfg.Interval+time.Second
	return m.lag, ok
}

// Reads returns the store a read that may lag goes to, and where that is:
// the replica while it lags at most MaxLag, else the primary.
func (m *Monitor) Reads() (*store.Store, Source) {
	if lag, ok := m.Lag(); ok && lag <= m.cfg.MaxLag {
		return m.cfg.Replica, FromReplica
	}
	return m.cfg.Primary, FromPrimary
}

// Run measures every interval until ctx ends, logging when the replica
// becomes unusable or usable again.
func (m *Monitor) Run(ctx context.Context) error {
	t := m.cfg.Clock.NewTicker(m.cfg.Interval)
	defer t.Stop()
	usable := false
	for {
		lag, err := m.RunOnce(ctx)
		now := err == nil && lag <= m.cfg.MaxLag
		switch {
		case ctx.Err() != nil:
		case now && !usable:
			m.cfg.Logger.Info("reads that may lag go to the read replica", "lag", lag)
		case !now && usable:
			m.cfg.Logger.Warn("reads go to the primary: the read replica lags or cannot be read", "lag", lag, "max_lag", m.cfg.MaxLag, "err", err)
		}
		usable = now
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}
