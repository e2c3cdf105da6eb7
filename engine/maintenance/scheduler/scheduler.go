// Package scheduler fires Schedule specs. It runs on the leader only (an
// engine leader service): each tick creates one task, and the tick is
// recorded in tasks.schedule_ticks in the same transaction. The tick's
// primary key, not the task's dedup key (released when the task finishes),
// is what makes a tick fire once, however leadership moves and however fast
// the task finishes: a second leader's insert of the same tick does nothing.
//
// Each schedule's next tick is computed from its own recorded history, never
// from the moment a pass happens to run: from its latest recorded tick (by
// any leader), or, for a schedule that never fired, from its first sighting
// (tasks.schedule_sightings, recorded once by the first leader that sees
// it). An `@every` schedule's ticks are that base plus whole intervals. So a
// leader change or a restart moves no tick, and a new schedule does not fire
// the ticks from before it was deployed.
//
// Ticks due but not yet fired when a leader takes over (or after the
// database was unreachable) are of two kinds:
//
//   - recent ones (less than CatchUp old, default 2 minutes) are a leader
//     change, not an outage: they always fire, so a handover loses no tick;
//   - older ones were missed while no leader ran: the schedule's missed
//     policy decides — "skip" forgets them, "latest" fires the latest one
//     (only when no recent tick fired).
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
	// Runs starts the workflow runs of the schedules that name a workflow
	// (engine/workflow); without it, their ticks are refused.
	Runs RunStarter
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
	// Refused ticks are recorded without a task: the client refused their
	// task when they came (a check that depends on that moment, such as
	// where a file input's folder leads), and each is logged.
	Refused int
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
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
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
		if clock.Sleep(ctx, s.cfg.Clock, wait) != nil {
			return
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

// Resume loads, for each schedule, the latest tick any leader recorded (for
// one that never fired: its first sighting, recorded now if this is it),
// then fires what is due at now (see the package doc for missed ticks). Call
// it when this instance becomes leader.
func (s *Scheduler) Resume(ctx context.Context, now time.Time) (Result, error) {
	last, err := s.cfg.Store.LastTicks(ctx)
	if err != nil {
		return Result{}, err
	}
	var unfired []string
	for _, sch := range s.cfg.Schedules {
		if _, ok := last[sch.Name()]; !ok {
			unfired = append(unfired, sch.Name())
		}
	}
	seen, err := s.cfg.Store.FirstSightings(ctx, unfired, now)
	if err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	s.cursors = make(map[string]time.Time, len(s.cfg.Schedules))
	for _, sch := range s.cfg.Schedules {
		if at, ok := last[sch.Name()]; ok {
			s.cursors[sch.Name()] = at
		} else if at, ok := seen[sch.Name()]; ok {
			s.cursors[sch.Name()] = at
		} else {
			s.mu.Unlock()
			return Result{}, fmt.Errorf("error resuming schedule %q: its first sighting was not recorded", sch.Name())
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
// in one transaction, and each cursor moves to the latest tick it settled
// (never to now: the next tick counts from the last one). Tests drive the
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
	settled := make(map[string]time.Time, len(s.cfg.Schedules))
	s.mu.Lock()
	for _, sch := range s.cfg.Schedules {
		ticks, skipped, cursor := s.dueTicks(sch, s.cursors[sch.Name()], now)
		res.Skipped += skipped
		settled[sch.Name()] = cursor
		for _, t := range ticks {
			due = append(due, pending{sch: sch, tick: t})
		}
	}
	s.mu.Unlock()
	if len(due) > 0 {
		fired, refused, err := s.fire(ctx, due)
		if err != nil {
			return res, err
		}
		res.Fired, res.Refused, res.AlreadyFired = fired, refused, len(due)-fired-refused
	}
	s.mu.Lock()
	for name, cursor := range settled {
		if cursor.After(s.cursors[name]) {
			s.cursors[name] = cursor
		}
	}
	s.mu.Unlock()
	if res.Fired > 0 || res.Skipped > 0 || res.Refused > 0 {
		s.log.Info("schedules fired", "fired", res.Fired, "already_fired", res.AlreadyFired, "skipped", res.Skipped,
			"refused", res.Refused)
	}
	return res, nil
}

// dueTicks returns the ticks of sch in (cursor, now] to fire, whether older
// ticks were skipped (1) by the missed policy, and the cursor once they are
// settled: the latest tick fired or skipped (cursor when none was due).
func (s *Scheduler) dueTicks(sch *spec.Schedule, cursor, now time.Time) ([]time.Time, int, time.Time) {
	first := s.nextAfter(sch, cursor, cursor)
	if first.IsZero() || first.After(now) {
		return nil, 0, cursor
	}
	recentFrom := now.Add(-s.cfg.CatchUp)
	from := cursor
	if recentFrom.After(from) {
		from = recentFrom
	}
	var ticks []time.Time
	for t := s.nextAfter(sch, cursor, from); !t.IsZero() && !t.After(now) && len(ticks) < s.cfg.MaxTicksPerPass; t = s.nextAfter(sch, cursor, t) {
		ticks = append(ticks, t)
	}
	skipped := 0
	if !first.After(recentFrom) { // some ticks were missed while no leader ran
		latest, ok := sch.LatestBetween(cursor, recentFrom)
		if sch.Missed() == spec.MissedLatest && len(ticks) == 0 && ok {
			ticks = append(ticks, latest)
		} else {
			s.log.Warn("skipping schedule ticks missed while no leader ran", "schedule", sch.Name(),
				"from", first, "until", recentFrom, "policy", sch.Missed())
			skipped = 1
			if ok {
				cursor = latest
			}
		}
	}
	if len(ticks) > 0 {
		cursor = ticks[len(ticks)-1]
	}
	return ticks, skipped, cursor
}

// nextAfter returns the first tick of sch strictly after t. An @every
// schedule's ticks are base (its latest tick or its first sighting, to the
// second) plus whole intervals; a cron schedule's are its cron line's, read
// across daylight-saving changes as a system cron reads them (wallClock).
func (s *Scheduler) nextAfter(sch *spec.Schedule, base, t time.Time) time.Time {
	if every, ok := sch.Every(); ok {
		// Counted in seconds, as robfig/cron counts them (and as
		// spec.Schedule.LatestBetween does), so no duration overflows.
		step := int64(max(every/time.Second, 1))
		n := int64(1)
		if d := t.Unix() - base.Unix(); d >= 0 {
			n = d/step + 1
		}
		return time.Unix(base.Unix()+n*step, 0).In(sch.Location())
	}
	if w := s.clocks[sch.Name()]; w != nil {
		return w.next(sch, t)
	}
	return sch.Next(t)
}

// next returns the first tick of sch after the schedule's settled ones.
func (s *Scheduler) next(sch *spec.Schedule, cursor time.Time) time.Time {
	return s.nextAfter(sch, cursor, cursor)
}

// fire records the ticks and creates their tasks in one transaction, and
// returns how many ticks not recorded before created their task (fired)
// and how many were refused. A tick whose task the client refuses (a check
// that depends on the moment: where a file input's folder leads now) is
// recorded without a task and logged: it is settled like any other, so it
// neither holds back the other schedules' ticks, which the refusal would
// roll back pass after pass until the catch-up window let them go, nor is
// tried again.
func (s *Scheduler) fire(ctx context.Context, due []pending) (fired, refused int, err error) {
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
	type refusal struct {
		tick store.Tick
		err  error
	}
	var refusals []refusal
	err = s.cfg.Store.InTx(ctx, func(st *store.Store) error {
		fired, refusals = 0, nil
		fresh, err := st.RecordTicks(ctx, ticks)
		if err != nil || len(fresh) == 0 {
			return err
		}
		reqs := make([]client.Request, 0, len(fresh))
		made := make([]store.Tick, 0, len(fresh))
		for _, t := range fresh {
			sch := bySchedule[t.Schedule]
			if sch.Workflow() != "" {
				started, err := s.startRun(ctx, st, sch, t.At)
				if err != nil {
					return err
				}
				if !started {
					refusals = append(refusals, refusal{tick: t, err: errNoRunStarter})
				} else {
					fired++
				}
				continue
			}
			req := client.Request{TaskType: sch.TaskType(), SchemaName: sch.SchemaName(), Inputs: sch.Inputs(), DedupKey: sch.DedupKey(t.At)}
			if err := s.cfg.Client.Check(req); err != nil {
				refusals = append(refusals, refusal{tick: t, err: err})
				continue
			}
			reqs, made = append(reqs, req), append(made, t)
		}
		if len(reqs) == 0 {
			return nil
		}
		created, err := s.cfg.Client.EnqueueManyIn(ctx, st, reqs)
		if err != nil {
			return fmt.Errorf("error creating scheduled tasks: %w", err)
		}
		ids := make([]uuid.UUID, len(created))
		for i, r := range created {
			ids[i] = r.Task.ID
		}
		fired += len(made)
		return st.SetTickTasks(ctx, made, ids)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("error firing %d schedule ticks: %w", len(due), err)
	}
	for _, r := range refusals {
		s.log.Warn("schedule tick refused: its task was not created, and the tick is not fired again",
			"schedule", r.tick.Schedule, "tick", r.tick.At, "err", r.err)
	}
	return fired, len(refusals), nil
}
