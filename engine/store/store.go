// Package store is wf's one boundary to PostgreSQL: every SQL statement the
// engine runs lives in this package, as plain SQL text a reader can run by
// hand, and no pgx row ever leaves it. Callers get wftype rows and sentinel
// errors (wftype.ErrNotFound, wftype.ErrConflict).
//
// Times: statements take an optional "now" (nil means the database clock),
// so tests can drive retries and leases with a controllable clock.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DBTX is what the store runs statements on: a pool, a connection or a
// transaction (the caller's, for transactional enqueue).
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Channels are the NOTIFY channel names (the seed's by default).
type Channels struct {
	TaskQueued        string
	TaskStatusChanged string
	Events            string
}

// DefaultChannels are the seed's channel names.
var DefaultChannels = Channels{
	TaskQueued:        "new_task_queued",
	TaskStatusChanged: "task_status_changed",
	Events:            "dynastore_events_channel",
}

// Store runs wf's statements on a DBTX.
type Store struct {
	db       DBTX
	channels Channels
}

// New returns a store on db with the default channel names.
func New(db DBTX) *Store { return &Store{db: db, channels: DefaultChannels} }

// WithChannels returns a copy of the store that notifies on the given channels.
func (s *Store) WithChannels(c Channels) *Store {
	cp := *s
	cp.channels = c
	return &cp
}

// Channels returns the NOTIFY channel names the store uses.
func (s *Store) Channels() Channels { return s.channels }

// WithTx returns a store whose statements run inside tx.
func (s *Store) WithTx(tx pgx.Tx) *Store {
	cp := *s
	cp.db = tx
	return &cp
}

// InTx runs fn in one transaction, committed when fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(*Store) error) error {
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error { return fn(s.WithTx(tx)) })
}

// DB returns what the store runs on.
func (s *Store) DB() DBTX { return s.db }

// RefreshPlans makes every idle connection of the store's pool plan its
// prepared statements again (DISCARD PLANS) at their next use. A statement's
// cached generic plan keeps the shape it was given when it was made: made
// while a partition was empty, the claim and completion read it with a
// sequential scan, and keep doing so as it fills with a backlog, until
// autovacuum happens to analyze it (a minute or more). The dispatcher calls
// this about once a second while it claims; plans are then made again from
// the partitions' current size. It does nothing on a connection or a
// transaction.
func (s *Store) RefreshPlans(ctx context.Context) error {
	pool, ok := s.db.(*pgxpool.Pool)
	if !ok {
		return nil
	}
	var errs []error
	for _, c := range pool.AcquireAllIdle(ctx) {
		if _, err := c.Exec(ctx, "DISCARD PLANS"); err != nil {
			errs = append(errs, err)
		}
		c.Release()
	}
	return wrap("discarding cached plans", errors.Join(errs...))
}

// IsUniqueViolation reports whether err is PostgreSQL's unique_violation.
func IsUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// wrap adds what the store was doing to a database error.
func wrap(doing string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("error %s: %w", doing, err)
}
