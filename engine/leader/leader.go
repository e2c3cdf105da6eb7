// Package leader elects one leader per service name with a PostgreSQL
// advisory lock held on a dedicated connection, as in the seed.
//
// States:
//
//	follower --(pg_try_advisory_lock = true)--> leader
//	leader   --(connection lost / stop)------> follower (the lock dies with the session)
//
// The leader holds the one LISTEN connection (on that same session),
// forwards notifications to the signal bus and sweeps (wakes the bus with
// no payload) once per poll interval, however many notifications come; it
// also runs the leader-only services (maintenance, schedules) in a context
// that ends the moment the connection is lost. A follower polls once per
// interval with one query that both tries the lock and probes for due work,
// and wakes the bus only when there is some: an idle follower costs one
// cheap query per poll interval.
package leader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/store"
)

// Config configures an Elector.
type Config struct {
	// Name is the service name (NAME): one leader per name.
	Name string
	// ConnConfig opens the dedicated connection.
	ConnConfig *pgx.ConnConfig
	// Owner identifies this instance in logs and in application_name.
	Owner string
	// Channels are the NOTIFY channels the leader listens on.
	Channels store.Channels
	// PollInterval is how often a follower tries to lead and probes for work,
	// and how often the leader sweeps (publishes TaskQueued and EventQueued
	// with no payload), however many notifications come in between. Default
	// 1s.
	PollInterval time.Duration
	// Clock measures PollInterval (the follower's polls, the leader's
	// sweeps, the pause before a reconnection). Default the wall clock.
	Clock clock.Clock
	// Bus receives the wake-ups.
	Bus *signalbus.Bus
	// TaskTypes returns the task types this instance can run (for the probe).
	TaskTypes func() []string
	// OnElected runs leader-only work; its context ends when leadership ends.
	// It runs on its own goroutine and must return when its context ends.
	OnElected func(ctx context.Context)
	// Logger receives state changes.
	Logger *slog.Logger
}

// Elector runs the election loop. Create it with New, then Run it.
type Elector struct {
	cfg      Config
	isLeader atomic.Bool
	changed  chan struct{}
	mu       sync.Mutex
}

// New validates cfg, fills defaults and returns an Elector.
func New(cfg Config) (*Elector, error) {
	if cfg.Name == "" {
		return nil, errors.New("error creating leader elector: no service name")
	}
	if cfg.ConnConfig == nil || cfg.Bus == nil {
		return nil, errors.New("error creating leader elector: no connection config or bus")
	}
	cfg.PollInterval = cmp.Or(cfg.PollInterval, time.Second)
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TaskTypes == nil {
		cfg.TaskTypes = func() []string { return nil }
	}
	if cfg.Channels.TaskQueued == "" {
		cfg.Channels = store.DefaultChannels
	}
	cc := cfg.ConnConfig.Copy()
	cc.RuntimeParams["application_name"] = "wf-leader:" + cfg.Name + ":" + cfg.Owner
	cfg.ConnConfig = cc
	return &Elector{cfg: cfg, changed: make(chan struct{})}, nil
}

// IsLeader reports whether this instance leads now.
func (e *Elector) IsLeader() bool { return e.isLeader.Load() }

// Changed returns a channel closed at the next change of leadership (for tests
// and for services that wait on the role).
func (e *Elector) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

func (e *Elector) setLeader(v bool) {
	if e.isLeader.Swap(v) == v {
		return
	}
	e.mu.Lock()
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

// LockName is the advisory lock key's text for a service name.
func LockName(service string) string { return "wf:leader:" + service }

// Run elects until ctx ends. Connection failures are retried every poll
// interval; the first of a series is logged as a warning, the next ones at
// most every failureLogEvery, and the reconnection once it succeeds. Run
// returns only when ctx is done.
func (e *Elector) Run(ctx context.Context) {
	log := e.cfg.Logger.With("service", e.cfg.Name, "owner", e.cfg.Owner)
	var failures int
	var failingSince, lastLogged time.Time
	failed := func(msg string, err error) {
		now := time.Now()
		if failures == 0 {
			failingSince = now
		}
		failures++
		if failures == 1 || now.Sub(lastLogged) >= failureLogEvery {
			log.Warn(msg, "err", err, "failures", failures, "since", failingSince)
			lastLogged = now
		}
	}
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, e.cfg.ConnConfig)
		if err != nil {
			if ctx.Err() == nil {
				failed("leader election: cannot connect, retrying", err)
			}
		} else {
			if failures > 0 {
				log.Info("leader election: connected again", "failures", failures, "after", time.Since(failingSince).Round(time.Millisecond))
				failures = 0
			}
			err = e.session(ctx, conn, log)
			closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = conn.Close(closeCtx)
			cancel()
			if err != nil && ctx.Err() == nil {
				failed("leader election: connection lost, retrying", err)
			}
		}
		_ = clock.Sleep(ctx, e.cfg.Clock, e.cfg.PollInterval)
	}
}

// failureLogEvery spaces the warnings of a series of connection failures.
const failureLogEvery = 30 * time.Second

// session polls as a follower on one connection until it leads or fails.
// It listens for cancellations (the status channel, rare): the server sends
// them while the connection is idle and the next poll's query reads them, so
// a task cancelled while it runs on this instance stops within a poll
// interval rather than at its next heartbeat, and the follower still sends
// one query per poll interval.
func (e *Elector) session(ctx context.Context, conn *pgx.Conn, log *slog.Logger) error {
	st := store.New(conn)
	if err := st.Listen(ctx, e.cfg.Channels.TaskStatusChanged); err != nil {
		return err
	}
	ticker := e.cfg.Clock.NewTicker(e.cfg.PollInterval)
	defer ticker.Stop()
	for {
		probe, err := st.TryLeadAndProbe(ctx, LockName(e.cfg.Name), e.cfg.TaskTypes())
		if err != nil {
			return err
		}
		e.forwardReceived(conn)
		if probe.Leader {
			return e.lead(ctx, conn, st, log)
		}
		if probe.TasksDue {
			e.cfg.Bus.Publish(signalbus.TaskQueued, "")
		}
		if probe.EventsDue {
			e.cfg.Bus.Publish(signalbus.EventQueued, "")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// forwardReceived forwards the notifications conn has already read (during
// its last query), without waiting: a done context makes
// WaitForNotification return what is buffered, or nothing, with no I/O.
func (e *Elector) forwardReceived(conn *pgx.Conn) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		n, err := conn.WaitForNotification(done)
		if err != nil || n == nil {
			return
		}
		e.forward(n.Channel, n.Payload)
	}
}

// lead holds leadership on conn until the connection fails or ctx ends.
func (e *Elector) lead(ctx context.Context, conn *pgx.Conn, st *store.Store, log *slog.Logger) error {
	ch := e.cfg.Channels
	listen := []string{ch.TaskQueued, ch.TaskStatusChanged, ch.Events}
	if ch.Events == store.DefaultChannels.Events {
		// Instances of an earlier wf notify on the old default.
		listen = append(listen, store.LegacyEventsChannel)
	}
	if err := st.Listen(ctx, listen...); err != nil {
		return err
	}
	leaderCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		e.setLeader(false)
		wg.Wait()
		log.Info("leadership ended")
	}()
	e.setLeader(true)
	log.Info("elected leader")
	if e.cfg.OnElected != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.cfg.OnElected(leaderCtx)
		}()
	}
	sweeps := newSweepTimer(e.cfg.Clock, e.cfg.PollInterval)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sweeps.run(leaderCtx)
	}()
	e.sweep()
	for {
		waitCtx, due := sweeps.wait(ctx)
		n, err := conn.WaitForNotification(waitCtx)
		sweepDue := due()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && conn.IsClosed():
			return fmt.Errorf("error waiting for notifications: %w", err)
		case err != nil:
			// The wait was cut short because a sweep is due, with no
			// notification since the last one: check the connection.
			if !sweepDue || (!errors.Is(err, context.Canceled) && !pgconnTimeout(err)) {
				return fmt.Errorf("error waiting for notifications: %w", err)
			}
			if err := conn.Ping(ctx); err != nil {
				return fmt.Errorf("error checking the leader connection: %w", err)
			}
		case n == nil:
			// No notification though the wait ended without error: the
			// connection's notifications go elsewhere (its settings carried
			// another connection's handler). Sweep rather than crash.
			sweepDue = true
		default:
			e.forward(n.Channel, n.Payload)
		}
		// Once per poll interval whatever the notifications, so that what
		// no notification announces (tasks and events whose retry delay
		// ended, expired event leases) is found under steady traffic too.
		if sweepDue {
			e.sweep()
		}
	}
}

// sweepTimer tells the leader's wait for notifications when a sweep is
// due: every poll interval on the clock, whether or not notifications came
// in between (a wait with a timeout restarted at each notification never
// ends under traffic more frequent than the interval).
type sweepTimer struct {
	ticker clock.Ticker
	mu     sync.Mutex
	due    bool
	cancel context.CancelFunc // of the wait under way, nil between waits
}

// newSweepTimer returns a sweepTimer whose ticker, every interval on c,
// already runs; run delivers its ticks.
func newSweepTimer(c clock.Clock, interval time.Duration) *sweepTimer {
	return &sweepTimer{ticker: c.NewTicker(interval)}
}

// run marks a sweep due, and cuts short the wait under way, at every tick
// until ctx ends; then it stops the ticker.
func (s *sweepTimer) run(ctx context.Context) {
	defer s.ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.ticker.C():
		}
		s.mu.Lock()
		s.due = true
		if s.cancel != nil {
			s.cancel()
		}
		s.mu.Unlock()
	}
}

// wait returns the context of the next wait for a notification, which ends
// with parent or when a sweep falls due (at once if one is due already),
// and the function to call when the wait is over: it reports whether a
// sweep is due, and clears it.
func (s *sweepTimer) wait(parent context.Context) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(parent)
	s.mu.Lock()
	s.cancel = cancel
	if s.due {
		cancel()
	}
	s.mu.Unlock()
	return ctx, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		cancel()
		s.cancel = nil
		due := s.due
		s.due = false
		return due
	}
}

// sweep wakes the dispatcher and the event consumer with no payload: they
// look for due work whatever announced it.
func (e *Elector) sweep() {
	e.cfg.Bus.Publish(signalbus.TaskQueued, "")
	e.cfg.Bus.Publish(signalbus.EventQueued, "")
}

func (e *Elector) forward(channel, payload string) {
	switch channel {
	case e.cfg.Channels.TaskQueued:
		e.cfg.Bus.Publish(signalbus.TaskQueued, payload)
	case e.cfg.Channels.TaskStatusChanged:
		e.cfg.Bus.Publish(signalbus.TaskStatusChanged, payload)
	case e.cfg.Channels.Events:
		e.cfg.Bus.Publish(signalbus.EventQueued, payload)
	case store.LegacyEventsChannel: // listened on only beside the default (lead)
		e.cfg.Bus.Publish(signalbus.EventQueued, payload)
	}
}

// pgconnTimeout recognises the timeout error pgx returns when the wait's
// context deadline passes.
func pgconnTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
