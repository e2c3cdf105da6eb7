// Package outbox carries the catalog's events into the queue when the
// catalog lives in a database of its own (catalog.database_url).
//
// With one database, a catalog write (a catalog, a collection, an asset)
// and its event (catalog.created, asset.updated, …) commit in one
// transaction: both or neither. With two, no transaction spans them, so:
//
//  1. The catalog write records its events in catalog.outbox, in its own
//     transaction (Record): the write and its events still commit together.
//  2. After that commit the writer relays them at once (Relay): in one
//     queue transaction it records each event's id in tasks.relayed_events
//     and writes the events whose id was not recorded before into
//     tasks.events, keeping their ids; then it deletes them from the outbox.
//  3. A Sweeper, on the leader, relays what a writer left behind (a process
//     that died between its commit and its relay, a queue database that was
//     down): nothing recorded is lost.
//
// The guarantees become: every catalog change that commits gets its events
// into the queue exactly once (a relay repeated after a crash between the
// queue's commit and the outbox's delete finds the ids recorded and writes
// nothing), with the id it was given in the catalog's transaction, but
// later: right after the write's own relay in the usual case, within one
// sweep interval after a crash or an outage of the queue's database. A
// subscriber may therefore see the catalog change before its event, never
// an event for a change that did not commit. A relayed event keeps its
// provenance: the task whose run made the write (its source task) and the
// trace context of the span it was emitted in.
package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
)

// Defaults.
const (
	// DefaultBatch is how many events one relay transaction carries.
	DefaultBatch = 500
	// DefaultSweepInterval is how often a Sweeper looks for events left behind.
	DefaultSweepInterval = 10 * time.Second
	// DefaultSweepAge is how old an event must be before a Sweeper relays
	// it: younger ones are their writer's to relay.
	DefaultSweepAge = 5 * time.Second
	// relayedKept is how long the queue remembers a relayed id whose
	// outbox row a crash kept from being forgotten at once.
	relayedKept = 7 * 24 * time.Hour
)

// Writer writes the catalog's events for the writes of one catalog store:
// inside the write's transaction on one database, through the outbox (and
// relayed after the commit) when the catalog has a database of its own.
type Writer struct {
	catalog *store.Store
	emitter *events.Emitter
	apart   bool
}

// NewWriter returns a Writer for writes through catalog (the catalog's
// store, on a pool) whose events em writes into the queue.
func NewWriter(catalog *store.Store, em *events.Emitter) *Writer {
	return &Writer{catalog: catalog, emitter: em, apart: !catalog.SameDatabase(em.Store())}
}

// Emit writes ev through st, the catalog's store bound to the transaction
// of the write it describes (InTx's): into tasks.events on one database,
// into the outbox when apart.
func (w *Writer) Emit(ctx context.Context, st *store.Store, ev events.Event) error {
	if w.apart {
		// The rows keep the write's provenance (its source task, its
		// trace context) for the relay to write into the queue.
		rows, err := w.emitter.Rows(ctx, ev)
		if err != nil {
			return err
		}
		return st.InsertOutbox(ctx, rows)
	}
	_, err := w.emitter.EmitIn(ctx, st, ev)
	return err
}

// InTx runs fn in one transaction of the catalog's database; when the
// catalog is apart and fn committed, it relays the outbox into the queue at
// once. A relay that fails leaves the events for the leader's sweep
// (Sweeper): the write stands and is not reported as failed.
func (w *Writer) InTx(ctx context.Context, fn func(st *store.Store) error) error {
	if err := w.catalog.InTx(ctx, fn); err != nil {
		return err
	}
	if w.apart {
		_, _ = Relay(ctx, w.catalog, w.emitter.Store(), 0, 0)
	}
	return nil
}

// Record validates evs and records them in the outbox through st, a
// catalog store bound to the transaction of the write they describe, with
// no provenance (Writer.Emit records the source task and trace context).
func Record(ctx context.Context, st *store.Store, evs ...events.Event) error {
	rows := make([]store.NewEvent, len(evs))
	for i, ev := range evs {
		row, err := events.Validate(ev)
		if err != nil {
			return err
		}
		rows[i] = row
	}
	return st.InsertOutbox(ctx, rows)
}

// Relay carries the outbox's events into the queue (see the package
// comment), in batches, and returns how many it wrote into tasks.events.
// catalog is the catalog's store, queue the queue's (both on pools).
// olderThan > 0 relays only events recorded at least that long ago.
func Relay(ctx context.Context, catalog, queue *store.Store, olderThan time.Duration, batch int) (int, error) {
	batch = cmp.Or(batch, DefaultBatch)
	total := 0
	for {
		n, written, err := relayBatch(ctx, catalog, queue, olderThan, batch)
		total += written
		if err != nil || n < batch {
			return total, err
		}
	}
}

// relayBatch relays one batch: it returns how many events it took from the
// outbox and how many of them it wrote into tasks.events.
func relayBatch(ctx context.Context, catalog, queue *store.Store, olderThan time.Duration, batch int) (taken, written int, err error) {
	var ids []uuid.UUID
	err = catalog.InTx(ctx, func(ct *store.Store) error {
		evs, err := ct.ClaimOutbox(ctx, olderThan, batch)
		if err != nil || len(evs) == 0 {
			return err
		}
		taken = len(evs)
		ids = make([]uuid.UUID, len(evs))
		months := make([]time.Time, len(evs))
		byID := make(map[uuid.UUID]store.NewEvent, len(evs))
		for i, e := range evs {
			ids[i], months[i], byID[e.ID] = e.ID, store.IDTime(e.ID), e
		}
		if err := queue.EnsureMonths(ctx, months...); err != nil {
			return err
		}
		err = queue.InTx(ctx, func(qt *store.Store) error {
			fresh, err := qt.MarkRelayed(ctx, ids)
			if err != nil || len(fresh) == 0 {
				return err
			}
			rows := make([]store.NewEvent, len(fresh))
			for i, id := range fresh {
				rows[i] = byID[id]
			}
			res, err := qt.InsertEvents(ctx, rows)
			if err != nil {
				return err
			}
			for _, r := range res {
				if r.Released {
					// The live event holding its dedup key ended meanwhile:
					// the next relay writes it (this one rolls back).
					return fmt.Errorf("event %s: its dedup key was released during the relay", r.Event.ID)
				}
				if !r.Duplicate {
					written++
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("error writing the catalog's events into the queue: %w", err)
		}
		// The queue holds them (or held them already): the rows go, in the
		// transaction that locked them.
		return ct.DeleteOutbox(ctx, ids)
	})
	if err != nil || len(ids) == 0 {
		return taken, written, err
	}
	// Their outbox rows are gone: the relay records are not needed any
	// more (a failure here leaves them to a later relay's clean-up).
	if _, err := queue.ForgetRelayed(ctx, ids, clock.Now().Add(-relayedKept)); err != nil {
		return taken, written, err
	}
	return taken, written, nil
}

// SweeperConfig configures a Sweeper. Zero fields take the defaults noted.
type SweeperConfig struct {
	// Queue is the queue's store, with the catalog's (store.WithCatalog).
	// Required.
	Queue *store.Store
	// Interval between sweeps. Default DefaultSweepInterval.
	Interval time.Duration
	// Age an event must reach before a sweep relays it. Default DefaultSweepAge.
	Age time.Duration
	// Clock times the sweeps. Default the real clock.
	Clock  clock.Clock
	Logger *slog.Logger
}

// Sweeper relays, every interval, the events their writers left in the
// outbox (the leader runs it).
type Sweeper struct{ cfg SweeperConfig }

// NewSweeper checks cfg and returns a Sweeper.
func NewSweeper(cfg SweeperConfig) (*Sweeper, error) {
	if cfg.Queue == nil || !cfg.Queue.CatalogApart() {
		return nil, errors.New("error creating the catalog outbox sweeper: Queue must be a queue store with the catalog apart (store.WithCatalog)")
	}
	cfg.Interval = cmp.Or(cfg.Interval, DefaultSweepInterval)
	cfg.Age = cmp.Or(cfg.Age, DefaultSweepAge)
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return &Sweeper{cfg: cfg}, nil
}

// RunOnce relays the events older than the sweep age and returns how many
// it wrote into the queue.
func (s *Sweeper) RunOnce(ctx context.Context) (int, error) {
	return Relay(ctx, s.cfg.Queue.Catalog(), s.cfg.Queue, s.cfg.Age, DefaultBatch)
}

// Run sweeps every interval until ctx ends, logging only when a sweep
// relayed something or failed.
func (s *Sweeper) Run(ctx context.Context) error {
	t := s.cfg.Clock.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		n, err := s.RunOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.cfg.Logger.Warn("error relaying the catalog's events", "err", err)
		case n > 0:
			s.cfg.Logger.Info("relayed catalog events left in the outbox", "events", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}
