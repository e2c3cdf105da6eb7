// Package scheduler fires Schedule specs. It runs on the leader only (an
// engine leader service): each tick creates one task, and the tick is
// recorded in tasks.schedule_ticks in the same transaction. The tick's
// primary key, not the task's dedup key (released when the task finishes),
// is what makes a tick fire once, however leadership moves and however fast
// the task finishes: a second leader's insert of the same tick does nothing.
//
// When an instance becomes leader it resumes each schedule from the latest
// tick recorded by any leader. Ticks missed since then are of two kinds:
//
//   - recent ones (less than CatchUp old, default 2 minutes) are a leader
//     change, not an outage: they always fire, so a handover loses no tick;
//   - older ones were missed while no leader ran: the schedule's missed
//     policy decides — "skip" forgets them, "latest" fires the latest one
//     (only when no recent tick fired).
//
// A schedule that never fired starts CatchUp before the moment its first
// leader resumes it, so that a leader change around its very first tick
// loses nothing (a schedule deployed just after its time fires that tick).
//
// Schedules in a zone with daylight-saving time fire as a system cron does:
// a fixed-time tick the clocks skip fires when they jump, one they repeat
// fires once; wildcard schedules (hourly, every 15 minutes) follow real
// time.
package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
)

// Defaults.
const (
	DefaultCatchUp         = 2 * time.Minute
	DefaultMaxTicksPerPass = 1000
	// maxSleep bounds one wait, so a clock jump is noticed.
	maxSleep = time.Minute
	// retryDelay is the wait after a failed pass (database unavailable).
	retryDelay = 5 * time.Second
)

// Config configures a Scheduler. Zero fields take the defaults noted.
type Config struct {
	// Store runs the scheduler's statements on a pool.
	Store *store.Store
	// Client creates the ticks' tasks.
	Client *client.Client
	// Schedules to fire (spec.Set.Schedules()).
	Schedules []*spec.Schedule
	// CatchUp: missed ticks younger than this always fire. Default 2m.
	CatchUp time.Duration
	// MaxTicksPerPass bounds the ticks one schedule fires in one pass.
	// Default 1000.
	MaxTicksPerPass int
	Clock           clock.Clock
	Logger          *slog.Logger
}

// Result says what one pass did.
type Result struct {
	// Fired ticks: each created its task (or found its live task).
	Fired int
	// AlreadyFired ticks were recorded by another leader: nothing created.
	AlreadyFired int
	// Skipped ticks were missed while no leader ran and the policy dropped
	// them (counted per schedule and pass: at least one).
	Skipped int
}

// Scheduler fires the ticks of a set of schedules.
type Scheduler struct {
	cfg    Config
	log    *slog.Logger
	clocks map[string]*wallClock // per schedule: its ticks across DST changes

	mu      sync.Mutex
	cursors map[string]time.Time // per schedule: ticks up to here are settled
}

// New fills defaults, validates cfg and returns a Scheduler.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Store == nil || cfg.Client == nil {
		return nil, errors.New("error creating scheduler: Store and Client are required")
	}
	cfg.CatchUp = cmp.Or(cfg.CatchUp, DefaultCatchUp)
	cfg.MaxTicksPerPass = cmp.Or(cfg.MaxTicksPerPass, DefaultMaxTicksPerPass)
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CatchUp < 0 || cfg.MaxTicksPerPass < 1 {
		return nil, fmt.Errorf("error creating scheduler: catch-up %s and max ticks per pass %d must be positive", cfg.CatchUp, cfg.MaxTicksPerPass)
	}
	clocks := make(map[string]*wallClock, len(cfg.Schedules))
	for _, sch := range cfg.Schedules {
		clocks[sch.Name()] = newWallClock(sch)
	}
	return &Scheduler{cfg: cfg, log: cfg.Logger.With("component", "scheduler"), clocks: clocks}, nil
}

// Run fires ticks until ctx ends (leadership lost or shutdown). It is an
// engine leader service: every new leadership starts by resuming from the
// recorded ticks, so the new leader picks up where the last one stopped.
func (s *Scheduler) Run(ctx context.Context) {
	if len(s.cfg.Schedules) == 0 {
		return
	}
	s.mu.Lock()
	s.cursors = nil // a new leadership resumes from the database
	s.mu.Unlock()
	wait := time.Duration(0)
	for {
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if _, err := s.RunAt(ctx, s.cfg.Clock.Now()); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("firing schedules failed; retrying", "err", err, "in", retryDelay)
			wait = retryDelay
			continue
		}
		wait = maxSleep
		if next := s.NextTick(); !next.IsZero() {
			wait = min(max(next.Sub(s.cfg.Clock.Now()), 0), maxSleep)
		}
	}
}

// Resume loads, for each schedule, the latest tick any leader recorded, then
// fires what is due at now (see the package doc for missed ticks). Call it
// when this instance becomes leader. A schedule that never fired resumes
// CatchUp before now: its first tick may have passed while leadership moved.
func (s *Scheduler) Resume(ctx context.Context, now time.Time) (Result, error) {
	last, err := s.cfg.Store.LastTicks(ctx)
	if err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	s.cursors = make(map[string]time.Time, len(s.cfg.Schedules))
	for _, sch := range s.cfg.Schedules {
		if at, ok := last[sch.Name()]; ok {
			s.cursors[sch.Name()] = at
		} else {
			s.cursors[sch.Name()] = now.Add(-s.cfg.CatchUp)
		}
	}
	s.mu.Unlock()
	return s.RunAt(ctx, now)
}

// NextTick returns the earliest tick not yet settled, across schedules (the
// zero time when there is none).
func (s *Scheduler) NextTick() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, sch := range s.cfg.Schedules {
		cur, ok := s.cursors[sch.Name()]
		if !ok {
			continue
		}
		if t := s.next(sch, cur); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// pending is one tick to fire.
type pending struct {
	sch  *spec.Schedule
	tick time.Time
}

// RunAt runs one scheduling pass at time now: every tick after each
// schedule's cursor and not after now fires (subject to the missed policy),
// in one transaction, and the cursors move to now. Tests drive the
// scheduler with it and a controllable clock. It resumes first when Resume
// was never called.
func (s *Scheduler) RunAt(ctx context.Context, now time.Time) (Result, error) {
	s.mu.Lock()
	resumed := s.cursors != nil
	s.mu.Unlock()
	if !resumed {
		return s.Resume(ctx, now)
	}
	var res Result
	var due []pending
	s.mu.Lock()
	for _, sch := range s.cfg.Schedules {
		ticks, skipped := s.dueTicks(sch, s.cursors[sch.Name()], now)
		res.Skipped += skipped
		for _, t := range ticks {
			due = append(due, pending{sch: sch, tick: t})
		}
	}
	s.mu.Unlock()
	if len(due) > 0 {
		fired, err := s.fire(ctx, due)
		if err != nil {
			return res, err
		}
		res.Fired, res.AlreadyFired = fired, len(due)-fired
	}
	s.mu.Lock()
	for _, sch := range s.cfg.Schedules {
		if now.After(s.cursors[sch.Name()]) {
			s.cursors[sch.Name()] = now
		}
	}
	s.mu.Unlock()
	if res.Fired > 0 || res.Skipped > 0 {
		s.log.Info("schedules fired", "fired", res.Fired, "already_fired", res.AlreadyFired, "skipped", res.Skipped)
	}
	return res, nil
}

// dueTicks returns the ticks of sch in (cursor, now] to fire and whether
// older ticks were skipped (1) by the missed policy.
func (s *Scheduler) dueTicks(sch *spec.Schedule, cursor, now time.Time) ([]time.Time, int) {
	first := s.next(sch, cursor)
	if first.IsZero() || first.After(now) {
		return nil, 0
	}
	recentFrom := now.Add(-s.cfg.CatchUp)
	from := cursor
	if recentFrom.After(from) {
		from = recentFrom
	}
	var ticks []time.Time
	for t := s.next(sch, from); !t.IsZero() && !t.After(now) && len(ticks) < s.cfg.MaxTicksPerPass; t = s.next(sch, t) {
		ticks = append(ticks, t)
	}
	if !first.After(recentFrom) { // some ticks were missed while no leader ran
		if sch.Missed() == spec.MissedLatest && len(ticks) == 0 {
			if t, ok := sch.LatestBetween(cursor, recentFrom); ok {
				ticks = append(ticks, t)
			}
		} else {
			s.log.Warn("skipping schedule ticks missed while no leader ran", "schedule", sch.Name(),
				"from", first, "until", recentFrom, "policy", sch.Missed())
			return ticks, 1
		}
	}
	return ticks, 0
}

// next returns the first tick of sch strictly after t, read across
// daylight-saving changes as a system cron reads them (wallClock).
func (s *Scheduler) next(sch *spec.Schedule, t time.Time) time.Time {
	if w := s.clocks[sch.Name()]; w != nil {
		return w.next(sch, t)
	}
	return sch.Next(t)
}

// fire records the ticks and creates their tasks in one transaction, and
// returns how many ticks were not recorded before.
func (s *Scheduler) fire(ctx context.Context, due []pending) (int, error) {
	sort.Slice(due, func(i, j int) bool {
		if !due[i].tick.Equal(due[j].tick) {
			return due[i].tick.Before(due[j].tick)
		}
		return due[i].sch.Name() < due[j].sch.Name()
	})
	bySchedule := make(map[string]*spec.Schedule, len(due))
	ticks := make([]store.Tick, len(due))
	for i, p := range due {
		ticks[i] = store.Tick{Schedule: p.sch.Name(), At: p.tick}
		bySchedule[p.sch.Name()] = p.sch
	}
	fired := 0
	err := pgx.BeginFunc(ctx, s.cfg.Store.DB(), func(tx pgx.Tx) error {
		st := s.cfg.Store.WithTx(tx)
		fresh, err := st.RecordTicks(ctx, ticks)
		if err != nil || len(fresh) == 0 {
			fired = 0
			return err
		}
		reqs := make([]client.Request, len(fresh))
		for i, t := range fresh {
			sch := bySchedule[t.Schedule]
			reqs[i] = client.Request{TaskType: sch.TaskType(), SchemaName: sch.SchemaName(), Inputs: sch.Inputs(), DedupKey: sch.DedupKey(t.At)}
		}
		created, err := s.cfg.Client.EnqueueManyTx(ctx, tx, reqs)
		if err != nil {
			return fmt.Errorf("error creating scheduled tasks: %w", err)
		}
		ids := make([]uuid.UUID, len(created))
		for i, r := range created {
			ids[i] = r.Task.ID
		}
		fired = len(fresh)
		return st.SetTickTasks(ctx, fresh, ids)
	})
	if err != nil {
		return 0, fmt.Errorf("error firing %d schedule ticks: %w", len(due), err)
	}
	return fired, nil
}
